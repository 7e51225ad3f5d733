// Package console is the DM console in the browser: a small web application,
// served by `glyphoxa serve` on console.listen and by `glyphoxa console`,
// where a DM reviews what the campaign's memory learned and sees, side by
// side, what each NPC knows and where every fact came from.
//
// # Pages
//
//   - Review: pending facts and open conflicts with their provenance and the
//     transcript lines behind them; confirm, reject, edit, keep old, keep new,
//     and many at once (ticked, or all from a session) with an undo banner.
//     The buttons call the same store operations as the Discord buttons
//     ([access.Graph]'s ConfirmFact, RejectFact, ResolveConflict,
//     ReviewFacts, UndoReview and [bot.EditFact]).
//   - As of: an entity's facts as they held at a session or a date.
//   - Ledger: the promises, debts and handovers heard at the table
//     (lifecycle/ledger): kind, who, to whom, what, due, the quoted line
//     linked to its session line, and when; an item passed on says who
//     holds it now. Players see confirmed entries; the DM sees those
//     waiting for review too, with Confirm and Reject (the Review page's
//     handler, which sends the DM back to the Ledger).
//   - Graph: the campaign's entities and facts, drawn by a small force layout
//     in a canvas, filtered by type, by an NPC's visibility and by session,
//     whole or around one entity; secret facts are marked; a search by name
//     or alias over the whole filtered campaign (/api/graph/find); an
//     entity's attributes, facts over time and mentions open beside it.
//   - Entities: every entity with an add form, and a page per entity with
//     forms to edit, merge and retire it: the operations of `/memory entity
//     add|edit|merge|retire` ([bot.AddEntity], [bot.EditEntity],
//     [bot.MergeEntity], [bot.RetireEntity]).
//   - NPC: what the NPC can see, what it heard, its memory traces, its
//     editable persona and an "ask as this NPC" box.
//   - Sessions: a speaker-coloured timeline per session, raw next to
//     corrected text, search, and a recap whose sentences link to the lines
//     they cite; the campaign recap (GET /recap) tells the sessions in the
//     order of their in-world dates (bot/recap.InWorldOrder).
//   - Live: who is speaking, NPC turns with latency per stage, memory health
//     and spool size, from a [LiveSource] or, for a table in another
//     process on the same database, from its [LivePublisher]; without
//     either the page says that no feed is connected.
//   - Download backup (GET /export, DM only): the campaign's bundle
//     (memory/bundle), gzipped and streamed from an [Exporter].
//
// # Sign-in and roles
//
// A browser signs in with Discord (OAuth2 authorization code flow, scopes
// identify, guilds and guilds.members.read) and is a DM by the same rule as
// slash commands ([bot.IsDM]); or with a one-time link that `glyphoxa
// console` prints ([Server.OneTimeLink]), which makes a DM session. A session
// lives in an HttpOnly, SameSite=Lax cookie (Secure behind TLS); every write
// is a POST carrying the session's CSRF token. Every request reads the
// campaign through the memory door ([Config.Door]), bound to the signed-in
// user: the DM's viewer for a DM session, a player's for a player session,
// so the store decides in SQL what a player sees: facts neither secret nor
// waiting for review, entities without their secret attributes; the console
// adds canon transcript lines and player-safe recaps. While the database
// cannot be reached, pages answer 503 in plain words, the Live page says
// its feed cannot be read, the sign-ins this console made still work and a
// sign-out holds (the console refuses the cookie and removes the sign-in
// from the database once it answers). Review, Entities, NPC
// and Live pages are DM-only, and every handler states the role it needs.
//
// Assets (templates, CSS, JavaScript) are embedded; the console needs no
// network beyond Discord's sign-in.
package console
