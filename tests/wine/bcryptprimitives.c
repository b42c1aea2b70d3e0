#include <windows.h>
#include <ntsecapi.h>
/* Wine 8 lacks bcryptprimitives.dll, which Rust's std calls for random bytes: a stand-in for
   the Wine prefix of tests/windows.sh only (nothing of it is in poll.exe). */
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x7fffffff ? 0x7fffffff : (ULONG)len;
        if (!RtlGenRandom(data, n)) return FALSE;
        data += n; len -= n;
    }
    return TRUE;
}
