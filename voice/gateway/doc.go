// Package gateway is the wire format of Discord's voice gateway, version 8:
// the JSON opcodes (identify, ready, select protocol, session description,
// heartbeats with seq_ack, resume, speaking, client connect and disconnect,
// the DAVE transition opcodes), the binary DAVE frames, and UDP IP
// discovery. The client (voice/conn) and the test server (voice/voicetest)
// both use it.
//
// Text frames are {"op": N, "d": payload, "seq": S}; the server numbers its
// messages with seq and the client acknowledges the last one it saw.
// Binary frames carry DAVE's MLS messages: server to client
// "uint16 seq | uint8 op | payload", client to server "uint8 op | payload".
package gateway
