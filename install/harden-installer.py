#!/usr/bin/env python3
"""Hardens the shell installer that dist 0.34 renders (poll-installer.sh), in place.

dist's installer skips the SHA-256 check when `sha256sum` is missing (stock macOS has
`shasum`), leaves its temporary folder behind when a download fails or an archive is
refused, and would `chmod +x` through an archive's `poll` that is a link. None of its
settings changes that (Cargo.toml, [workspace.metadata.dist]), so this edits what it
renders: the release workflow runs it on the installer it publishes
(.github/workflows/release.yml, job build-global-artifacts) and tests/it/release.rs on
the one it renders, so the script users get is the one tested.

Each edit names the text of dist's installer it replaces, which must be there exactly
once: a new dist that changed it fails here, to be read again.

Usage: install/harden-installer.py PATH/poll-installer.sh
"""

import re
import sys

# The SHA-256 with whichever tool the machine has, and nothing installed without one.
CHECKSUM = r'''verify_checksum() {
    # poll: sha256sum (Linux), else shasum (macOS), else openssl; with none, nothing is installed.
    local _file="$1"
    local _checksum_style="$2"
    local _checksum_value="$3"
    local _calculated_checksum

    if [ "$_checksum_style" != "sha256" ] || [ -z "$_checksum_value" ]; then
        err "no SHA-256 to check the archive against: refusing to install it"
    fi
    if check_cmd sha256sum; then
        _calculated_checksum="$(sha256sum -b "$_file" | awk '{printf $1}')"
    elif check_cmd shasum; then
        _calculated_checksum="$(shasum -a 256 -b "$_file" | awk '{printf $1}')"
    elif check_cmd openssl; then
        _calculated_checksum="$(openssl dgst -sha256 "$_file" | awk '{printf $NF}')"
    else
        err "cannot check the archive's SHA-256: none of sha256sum, shasum and openssl is installed"
    fi

    if [ "$_calculated_checksum" != "$_checksum_value" ]; then
        err "checksum mismatch
            want: $_checksum_value
            got:  $_calculated_checksum"
    fi
}
'''

EDITS = [
    # dist's own verify_checksum, whole: it skips the check when its one tool is missing.
    (re.compile(r'^verify_checksum\(\) \{\n.*?^\}\n', re.S | re.M), CHECKSUM),
    # An archive the installer has no checksum for is not installed unchecked.
    (
        '            say "no checksums to verify" 1>&2\n',
        '            err "no SHA-256 for $_artifact_name in this installer: refusing to install it"\n',
    ),
    # The temporary folder goes however the installer ends: a refused archive, an error.
    (
        '        _dir="$(ensure mktemp -d)" || return 1\n',
        '        _dir="$(ensure mktemp -d)" || return 1\n'
        '        # poll: removed however the installer ends.\n'
        '        _poll_temporary="$_dir"\n'
        '        trap \'rm -rf "$_poll_temporary"\' EXIT\n',
    ),
    # ... and a failed download's folder before the next URL is tried.
    (
        '            say "failed to download $_url" 1>&2\n            continue\n',
        '            say "failed to download $_url" 1>&2\n            ignore rm -rf "$_dir"\n            continue\n',
    ),
    # Only a regular file is installed: `chmod +x` would follow a link, and the link would be installed.
    (
        '    install "$_dir" "$_bins" "$_libs" "$_staticlibs" "$_arch" "$@"\n',
        '    # poll: only a regular file is installed; chmod +x would follow a link.\n'
        '    for _bin_name in $_bins; do\n'
        '        if [ -L "$_dir/$_bin_name" ] || [ ! -f "$_dir/$_bin_name" ]; then\n'
        '            err "the archive\'s $_bin_name is not a regular file: refusing to install it"\n'
        '        fi\n'
        '    done\n'
        '    install "$_dir" "$_bins" "$_libs" "$_staticlibs" "$_arch" "$@"\n',
    ),
]


def harden(text):
    """`text` with every edit made; each must find its text exactly once."""
    for old, new in EDITS:
        if isinstance(old, str):
            found = text.count(old)
            text = text.replace(old, new)
        else:
            text, found = old.subn(lambda _: new, text)
        if found != 1:
            what = old if isinstance(old, str) else old.pattern
            sys.exit(f"harden-installer: dist's installer has {found} of {what!r}, not one: read it again")
    return text


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    path = sys.argv[1]
    with open(path, encoding="utf-8") as file:
        hardened = harden(file.read())
    with open(path, "w", encoding="utf-8") as file:
        file.write(hardened)


if __name__ == "__main__":
    main()
