// Package voicesession connects the bot's session commands to the table
// (package table): /session start joins the DM's voice channel through the
// main gateway ([GatewayLink]) and opens a table session on it; /session
// end, an empty channel, the maximum length or a lost connection end it,
// and its post-session processing runs in the background.
//
// A [Manager] implements bot.VoiceSessions: one running table session per
// guild, its status for /session status, the DM's /npc say, and a player's
// /privacy forget-me reaching the live session. Everything between the
// packets and the NPC's voice is package table's.
package voicesession
