package memory

// ForgetReport says what forgetting a speaker (a player's /privacy
// forget-me) removed. Each layer fills in its own part: the store's
// deletion from long-term memory (postgres.Campaign.ForgetSpeaker) the
// first four fields, a running session's live conversation
// (contextmgr.Manager.Forget, session.Session.Forget) the last two.
type ForgetReport struct {
	// Entries are the speaker's transcript lines deleted from the log.
	Entries int64
	// Chunks deleted because they contained the speaker's words.
	Chunks int64
	// Facts deleted because their only evidence was the speaker's lines,
	// counting only those the viewer of the handle that forgot could read:
	// a player's own forget-me is told nothing of the DM's secret facts,
	// nor of those of a split scene they were not in.
	Facts int64
	// HiddenFacts are the deleted facts that viewer could not read (for
	// the DM's logs; never shown to the player).
	HiddenFacts int64
	// Sessions are the sessions whose chunks must be rebuilt from the
	// remaining lines.
	Sessions []string

	// Cards are the ids of the continuity cards quoting the speaker's
	// lines that were deleted (the bot takes their direct messages to the
	// DM down too).
	Cards []string

	// Messages is the number of the speaker's lines taken out of a
	// running session's conversation and of what its summaries covered.
	Messages int
	// Summaries of the running session rewritten without the speaker's
	// words (or dropped).
	Summaries int
	// Spooled is the number of the speaker's lines taken out of the outage
	// spool before they reached the database.
	Spooled int
	// Deferred is set when the database was unreachable: the deletion from
	// long-term memory did not run; it is queued in the outage spool and
	// runs when the memory guard replays it.
	Deferred bool
}
