# Installs poll on Windows from a GitHub release, in one line:
#
#   powershell -ExecutionPolicy Bypass -c "irm https://github.com/OWNER/poll/releases/latest/download/poll-installer.ps1 | iex"
#
# It downloads the x86_64 archive and its SHA-256 sum, refuses an archive that does not match,
# and puts poll.exe in POLL_INSTALL_DIR (default ~\.local\bin). Inside GitHub Actions it appends
# that folder to GITHUB_PATH; elsewhere it adds it to the user's PATH, unless
# POLL_NO_MODIFY_PATH=1. POLL_DOWNLOAD_URL takes the release from a mirror (a folder with the
# release's files) in place of GitHub.
#
# Written by hand, where the shell installer is dist's: dist's PowerShell installer checks no
# checksum. The release workflow (.github/workflows/release-extras.yml) publishes this file with
# the release's version in place of 'latest' below.

$PollRelease = 'latest'
$PollRepository = 'https://github.com/OWNER/poll'

& {
    Set-StrictMode -Version 3
    $ErrorActionPreference = 'Stop'
    # Invoke-WebRequest draws a progress bar that slows Windows PowerShell's downloads many times over.
    $ProgressPreference = 'SilentlyContinue'

    if ($env:POLL_DOWNLOAD_URL) {
        $release = $env:POLL_DOWNLOAD_URL.TrimEnd('/')
    } elseif ($PollRelease -eq 'latest') {
        $release = "$PollRepository/releases/latest/download"
    } else {
        $release = "$PollRepository/releases/download/v$PollRelease"
    }

    # ARM64 Windows runs the x86_64 build; there is no 32-bit one.
    if (@('AMD64', 'ARM64') -notcontains $env:PROCESSOR_ARCHITECTURE) {
        throw "poll-installer: there is no poll for $env:PROCESSOR_ARCHITECTURE Windows, only for x86_64 (AMD64)"
    }
    $archive = 'poll-x86_64-pc-windows-msvc.zip'
    $dir = if ($env:POLL_INSTALL_DIR) { $env:POLL_INSTALL_DIR } else { Join-Path $HOME '.local\bin' }

    $temp = Join-Path ([IO.Path]::GetTempPath()) "poll-installer-$([guid]::NewGuid())"
    New-Item -ItemType Directory -Path $temp | Out-Null
    try {
        # Windows PowerShell 5.1 may not offer TLS 1.2, which GitHub requires, by default.
        [Net.ServicePointManager]::SecurityProtocol = [Net.ServicePointManager]::SecurityProtocol -bor [Net.SecurityProtocolType]::Tls12
        foreach ($name in @($archive, "$archive.sha256")) {
            try {
                Invoke-WebRequest -UseBasicParsing -Uri "$release/$name" -OutFile (Join-Path $temp $name)
            } catch {
                throw "poll-installer: could not download $release/${name}: $($_.Exception.Message)"
            }
        }
        # The sum file is sha256sum's line: the hash, a space, then `*` and the file's name.
        $want = ((Get-Content -Raw (Join-Path $temp "$archive.sha256")).Trim() -split '\s+')[0].ToLowerInvariant()
        $got = (Get-FileHash -Algorithm SHA256 -Path (Join-Path $temp $archive)).Hash.ToLowerInvariant()
        if ($want -ne $got) {
            throw "poll-installer: checksum mismatch for ${archive}: the release says $want, the download is $got; nothing was installed"
        }
        Expand-Archive -Path (Join-Path $temp $archive) -DestinationPath (Join-Path $temp 'unpacked')
        New-Item -ItemType Directory -Force -Path $dir | Out-Null
        Copy-Item -Force -Path (Join-Path $temp 'unpacked\poll.exe') -Destination (Join-Path $dir 'poll.exe')
    } finally {
        Remove-Item -Recurse -Force -Path $temp -ErrorAction SilentlyContinue
    }
    Write-Output "poll-installer: installed $(Join-Path $dir 'poll.exe')"

    if ($env:GITHUB_PATH) {
        # One line for the runner to add to PATH for the next steps; UTF-8 without a BOM.
        [IO.File]::AppendAllText($env:GITHUB_PATH, "$dir`n")
    } elseif ($env:POLL_NO_MODIFY_PATH -ne '1') {
        $userPath = [Environment]::GetEnvironmentVariable('Path', 'User')
        $entries = @(if ($userPath) { $userPath -split ';' | Where-Object { $_ } })
        if ($entries -notcontains $dir) {
            [Environment]::SetEnvironmentVariable('Path', ((@($dir) + $entries) -join ';'), 'User')
            Write-Output "poll-installer: added $dir to your PATH; a new terminal will find poll"
        }
    }
}
