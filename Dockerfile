# syntax=docker/dockerfile:1
# Build: cgo is needed for Opus (layeh.com/gopus bundles libopus; its false
# -Wstringop-overread warnings are silenced as in the Makefile).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-stringop-overread" go build -trimpath -ldflags="-s -w" -o /out/glyphoxa ./cmd/glyphoxa

# Run: a slim Debian with the offline voice engines (festival with its US
# English voices and flite, which speech-to-text understands best, and
# espeak-ng, the last fallback; pocketsphinx for keyless speech-to-text)
# and a non-root user.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates espeak-ng festival festvox-us-slt-hts festvox-kallpc16k \
      festvox-kdlpc16k flite pocketsphinx pocketsphinx-en-us \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/glyphoxa --create-home glyphoxa \
 && mkdir -p /etc/glyphoxa /campaigns
COPY --from=build /out/glyphoxa /usr/local/bin/glyphoxa
USER glyphoxa
WORKDIR /var/lib/glyphoxa
EXPOSE 9464 9465
# glyphoxa checks itself (ready: database and Discord connected): no curl or
# wget in the image. (docker-compose.yml passes the address it listens on.)
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
  CMD ["glyphoxa", "health", "--ready"]
ENTRYPOINT ["/usr/local/bin/glyphoxa"]
CMD ["serve"]
