// Package conn is glyphoxa's Discord voice connection: voice gateway v8
// over WebSocket, UDP with IP discovery, RTP with the rtpsize AEAD transport
// modes, DAVE end-to-end encryption, and reconnects.
//
// The main gateway (discordgo) supplies the session: send a voice state
// update, collect VOICE_STATE_UPDATE (session id) and VOICE_SERVER_UPDATE
// (token, endpoint), and Dial with them. The connection then:
//
//   - delivers each speaker's Opus frames on Packets, keyed by Discord user
//     id, in sequence order, with gaps reported (Packet.Lost);
//   - sends Opus frames with WriteOpus (the caller paces them every 20 ms;
//     SetSpeaking(false) ends a stream with five silence frames);
//   - reports users joining and leaving, reconnects and readiness on Events;
//   - survives a dropped WebSocket by resuming (UDP, keys and the DAVE
//     group are kept), re-identifies through Config.Rejoin when the session
//     is gone, stops when kicked, and fails with a clear error for close
//     code 4017 (DAVE required) or an unsupported mode;
//   - follows the bot to another channel or voice server with Switch
//     (EventMoved; a new DAVE session for the new group), rejoining through
//     Config.Rejoin if the new session fails, and ending with a clear
//     error (EventClosed, Packets closed) when rejoining gives up.
//
// Frames are DAVE-decrypted after transport decryption and DAVE-encrypted
// before it; while the DAVE group is not ready they pass through.
package conn
