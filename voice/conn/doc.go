// Package conn is glyphoxa's Discord voice connection: voice gateway v8
// over WebSocket, UDP with IP discovery, RTP with the rtpsize AEAD transport
// modes, DAVE end-to-end encryption, and reconnects.
//
// The main gateway (discordgo) supplies the session: send a voice state
// update, collect VOICE_STATE_UPDATE (session id) and VOICE_SERVER_UPDATE
// (token, endpoint), and Dial with them. The connection then:
//
//   - delivers each speaker's Opus frames on Packets (audio.Packet), keyed
//     by Discord user id, in sequence order, with gaps reported
//     (Packet.Lost); a speaker's stream starts over, with no loss
//     reported, when its sequence numbers jump by more than 1000 packets,
//     when its SSRC is reused with lower numbers after a second's pause,
//     when its client disconnects (op 13), and when op 5 names another
//     user for its SSRC; the first packets of a
//     stream wait for up to three (or the reorder delay) so that a packet
//     reordered at the start is not dropped;
//   - sends Opus frames with WriteOpus (the caller paces them every 20 ms;
//     SetSpeaking(false) ends a stream with five silence frames);
//   - reports users joining and leaving, reconnects and readiness on Events;
//   - survives a dropped WebSocket by resuming (UDP, keys and the DAVE
//     group are kept; a gateway message over MaxGatewayMessage drops the
//     connection the same way), re-identifies through Config.Rejoin when the session
//     is gone, and fails with a clear error for close code 4017 (DAVE
//     required) or an unsupported mode;
//   - after close code 4014 or 4022, which Discord sends when the bot is
//     moved, kicked or disconnected, or the call ends or changes server,
//     waits Config.MoveWait (5 s, as discord.js advises) for Switch with
//     the new session (EventWaitingForMove); without one it ends with a
//     *DisconnectedError (errors.Is ErrDisconnected) whose Reason the bot
//     can post in the channel; Removed ends it at once when the main
//     gateway reports the bot in no channel;
//   - sends an 8-byte UDP keepalive every 5 s, as discord.js does, so a
//     bot that only listens keeps its NAT mapping;
//   - sends what the DAVE session asks for on its own (recovery after
//     repeated decrypt failures) and reports EventE2EEFailed when it gives
//     up; Rejoin then starts a new voice and DAVE session in the channel;
//   - announces speaking (op 5) before the first frame of a stream and
//     again for a new SSRC (after a re-identify or a Switch in the middle
//     of a stream) as soon as the new session is ready, ahead of its
//     first frame, which listeners would otherwise drop;
//   - follows the bot to another channel or voice server with Switch
//     (EventMoved; a new DAVE session for the new group), rejoining through
//     Config.Rejoin if the new session fails, and ending with a clear
//     error (EventClosed, Packets closed) when rejoining gives up.
//
// Frames are DAVE-decrypted after transport decryption and DAVE-encrypted
// before it. While DAVE is on, a frame the DAVE session has no key for is
// never sent unencrypted: it is dropped (Stats.NotEncrypted) and WriteOpus
// returns the error; frames pass through unencrypted only under protocol
// version 0 (no DAVE, or after a downgrade).
package conn
