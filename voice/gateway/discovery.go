package gateway

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
)

// IP discovery (UDP) packets: 74 bytes, big-endian.
//
//	0  2  type (1 request, 2 response)
//	2  2  length of the rest (70)
//	4  4  SSRC
//	8  64 address, NUL-terminated ASCII (zero in a request)
//	72 2  port (zero in a request)
const (
	DiscoveryLen      = 74
	discoveryRequest  = 1
	discoveryResponse = 2
	discoveryBodyLen  = 70
)

// DiscoveryRequest returns the request for ssrc.
func DiscoveryRequest(ssrc uint32) []byte {
	b := make([]byte, DiscoveryLen)
	binary.BigEndian.PutUint16(b, discoveryRequest)
	binary.BigEndian.PutUint16(b[2:], discoveryBodyLen)
	binary.BigEndian.PutUint32(b[4:], ssrc)
	return b
}

// ParseDiscoveryRequest returns the SSRC of a request.
func ParseDiscoveryRequest(b []byte) (uint32, error) {
	if len(b) != DiscoveryLen || binary.BigEndian.Uint16(b) != discoveryRequest {
		return 0, fmt.Errorf("%w: not an IP discovery request", errMalformed)
	}
	return binary.BigEndian.Uint32(b[4:]), nil
}

// DiscoveryResponse returns the response telling ssrc its external address.
func DiscoveryResponse(ssrc uint32, addr netip.AddrPort) []byte {
	b := make([]byte, DiscoveryLen)
	binary.BigEndian.PutUint16(b, discoveryResponse)
	binary.BigEndian.PutUint16(b[2:], discoveryBodyLen)
	binary.BigEndian.PutUint32(b[4:], ssrc)
	copy(b[8:71], addr.Addr().String())
	binary.BigEndian.PutUint16(b[72:], addr.Port())
	return b
}

// ParseDiscoveryResponse returns the address and port of a response; ok is
// false for any other datagram.
func ParseDiscoveryResponse(b []byte) (netip.AddrPort, bool) {
	if len(b) != DiscoveryLen || binary.BigEndian.Uint16(b) != discoveryResponse {
		return netip.AddrPort{}, false
	}
	raw := b[8:72]
	if i := bytes.IndexByte(raw, 0); i >= 0 {
		raw = raw[:i]
	}
	ip, err := netip.ParseAddr(string(raw))
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ip, binary.BigEndian.Uint16(b[72:])), true
}
