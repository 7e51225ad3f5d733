// Package bot is glyphoxa's Discord bot: the part DMs and players touch.
//
// It binds each Discord guild to a campaign, registers the slash commands
// (/session, /npc, /memory, /recap, /privacy) per guild, and answers
// interactions: DM memory review with Confirm / Reject / Edit buttons and an
// edit modal, review of new facts that conflict with canon (keep the new
// one or the old), entity and fact editing, search, recaps traceable to their
// transcript lines, privacy opt-out and forget-me, and voice session control.
// DM-only commands are checked here, against a DM role or allowlist per
// guild, not only by Discord's permissions.
//
// Every command reads the campaign's memory through the memory door
// ([Deps].Door), bound to the member who runs it: the DM's viewer for a
// member [IsDM] names, a player's for everyone else, so a player's command
// receives only what players may see. An outage (memory.ErrUnavailable)
// and a refusal (memory.ErrForbidden) are answered in plain words, never
// with the driver's message.
//
// A command, button or form that changes something is acknowledged first
// (a deferred reply or a deferred update) and acts only if Discord took
// the acknowledgement: one Discord refuses (10062 "Unknown interaction",
// its 3 s gone while the process was paused, or Discord unreachable) is
// logged at Warn and changes nothing; the member, told that the
// application did not respond, runs it again.
//
// An exchange with Discord that fails on the way (a dropped connection,
// a timeout, a 5xx) is not taken for a refusal: the acknowledgement and
// the edits of a response are sent again, a few times with backoff, so a
// member is not left with "thinking…" when the bot could answer (an
// acknowledgement whose answer was lost is recognised by Discord's
// refusal of the second copy as already acknowledged). A follow-up
// message is sent again only when Discord surely did not post it. An
// answer that finally fails is logged at Error.
package bot
