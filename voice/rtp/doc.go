// Package rtp reads and writes the RTP packets of Discord voice (RFC 3550)
// and seals and opens them with Discord's "rtpsize" AEAD transport modes,
// aead_aes256_gcm_rtpsize and aead_xchacha20_poly1305_rtpsize.
//
// # Packet layout with transport encryption
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|V=2|P|X|  CC   |M|     PT      |       sequence number         | \
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+  |
//	|                           timestamp                           |  | additional
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+  | data (in
//	|                             SSRC                              |  | clear)
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+  |
//	|            CSRC list (CC × 32 bits), if any                   |  |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+  |
//	|   profile (0xBEDE), if X    |   length in 32-bit words, if X  | /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| ciphertext: extension body (if X), then the (DAVE) Opus frame |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     16-byte AEAD tag                          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|            32-bit nonce counter, big-endian, in clear         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The nonce is the counter, big-endian, in the first four bytes of the
// AEAD's nonce (12 bytes for AES-256-GCM, 24 for XChaCha20-Poly1305), the
// rest zero. Each sender increments its counter per packet.
package rtp
