# The release's container image, ghcr.io/OWNER/poll:VERSION (contract: "Platforms and installation"),
# there to be copied from (`COPY --from=ghcr.io/OWNER/poll:1 /poll /poll`) into images with no curl,
# or run as an init container. Its context is one platform's musl archive unpacked:
# .github/workflows/publish-image.yml makes it from the archives the release published (no second
# build), and tests/windows.sh (its musl part) from the archive `dist build` made here.
#
# Nothing but `poll` and its licences: no shell, no libc, no CA bundle. With no system store to
# find, `poll` trusts its built-in Mozilla roots and `-v` says so; `--cacert` adds a company's CA.
FROM scratch

# Given by the workflow: the release's version and the repository it was built from.
ARG VERSION
ARG SOURCE
LABEL org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="MIT OR Apache-2.0"

COPY LICENSE-MIT LICENSE-APACHE /licenses/
COPY poll /poll

# Not root: a Kubernetes pod under `runAsNonRoot` (the "restricted" Pod Security level) runs it
# as it is; 65534 is nobody, as in distroless's nonroot images. (A `COPY --from` takes the file,
# not this line.)
USER 65534:65534
ENTRYPOINT ["/poll"]
