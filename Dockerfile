# syntax=docker/dockerfile:1
# Build: cgo is needed for Opus (layeh.com/gopus bundles libopus).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -trimpath -ldflags="-s -w" -o /out/glyphoxa ./cmd/glyphoxa

# Run: a slim Debian with the offline voice engines (espeak-ng for speech,
# pocketsphinx for keyless speech-to-text) and a non-root user.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates espeak-ng pocketsphinx pocketsphinx-en-us \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/glyphoxa --create-home glyphoxa
COPY --from=build /out/glyphoxa /usr/local/bin/glyphoxa
USER glyphoxa
WORKDIR /var/lib/glyphoxa
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/glyphoxa"]
CMD ["serve"]
