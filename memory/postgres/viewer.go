package postgres

import (
	"fmt"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory"
)

// view is the reader a campaign's layers are bound to. Its zero value is the
// system view: the server's own code (the turn pipeline, consolidation,
// review), which reads everything. [Campaign.As] binds a person's or an
// NPC's role; every read of the bound layers then filters in SQL with the
// one definition of secrecy of migration 0010 (glyphoxa_public and the
// "secret": true marker), so a reader never receives what it may not see.
//
// The NPC id is written into the SQL as a literal (quoted by sqlLiteral,
// which is exact under standard_conforming_strings, PostgreSQL's default
// since 9.1 and a requirement of pgx): a parameter would shift every
// query's numbering, and the ids come from the campaign's own entities.
type view struct {
	v memory.Viewer
	// campaign is the campaign the handle reads (set by newCampaign):
	// [view.entityVisible] reads the campaign's traced scene entities once
	// per statement.
	campaign string
}

// system reports whether this is the system view or the DM's: no filter.
func (w view) system() bool { return w.v.Role == 0 || w.v.Role == memory.RoleDM }

// sqlLiteral quotes s as an SQL string literal.
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// entityAttrs is the SQL expression of the attributes of entity alias the
// viewer may read: all of them for the DM and for an NPC's own entity, the
// public ones otherwise.
func (w view) entityAttrs(alias string) string {
	switch {
	case w.system():
		return alias + ".attributes"
	case w.v.Role == memory.RoleNPC:
		return "CASE WHEN " + alias + ".id = " + sqlLiteral(w.v.NPCID) + " THEN " + alias + ".attributes ELSE " +
			publicAttrs(alias) + " END"
	}
	return publicAttrs(alias)
}

// publicAttrs is the SQL expression of entity alias's public attributes:
// glyphoxa_public_attributes (migration 0010) of its attributes, which
// PostgreSQL computes when the row is written and stores in the generated
// column public_attributes (migration 0029), NULL where it would return
// its input. Reading it costs nothing per row; calling the function on
// every read walked the object in PL/pgSQL, a loop and a call per key, and
// even the test for whether it had to (below) took a tenth to a fifth of
// the database's time for a 3-hop walk at 1k entities.
//
// The column is NULL when the attributes hold no secret: every secret
// key, and the "secret" marker of a secret object, begins with one of
// secretKeyStarts in ASCII letters of either case (memory.SecretKey), and
// jsonb's text writes every key as a double quote and the key, escaping
// only quotes, backslashes and control characters, none of which is in
// those starts. So attributes whose text has no double quote followed by
// one of them (ASCII case-insensitively) hold no secret at any depth; a
// match anywhere, in a key or in a value, only costs the exact call when
// the row is written. TestPublicAttrsShortcut checks the column against
// the function and the Go definition.
func publicAttrs(alias string) string {
	return "coalesce(" + alias + ".public_attributes, " + alias + ".attributes)"
}

// secretKeyStarts is an SQL regular expression alternation matching the
// start of every secret attribute key, lower-cased: the secret prefixes
// and the first word of the secret names of memory.SecretKey. Migration
// 0029 writes it into entities.public_attributes (TestPublicAttrsShortcut
// checks they agree).
const secretKeyStarts = "secret|gm_|dm_|hidden|known_by|notes_"

// entityCols are the entity columns of alias as the viewer reads them, in
// the order scanEntity expects.
func (w view) entityCols(alias string) string {
	return alias + ".id, " + alias + ".type, " + alias + ".name, " + alias + ".aliases, " + w.entityAttrs(alias) +
		", " + alias + ".created_at, " + w.updatedCol(alias)
}

// updatedCol is the last-update stamp of entity or relationship alias the
// viewer reads, and orders by: the DM and the system read updated_at,
// which every change moves (the server's caches and compaction need it);
// anyone else public_updated_at (migrations 0046 and 0050), which a change
// of DM-only attributes alone does not move, so neither the stamp nor a
// list's order tells when the DM wrote a secret note.
func (w view) updatedCol(alias string) string {
	if w.system() {
		return alias + ".updated_at"
	}
	return alias + ".public_updated_at"
}

// publicEntityCols are entity columns with public attributes only, for an
// entity reached through another; their stamp is the public one too.
func publicEntityCols(alias string) string {
	return alias + ".id, " + alias + ".type, " + alias + ".name, " + alias + ".aliases, " + publicAttrs(alias) +
		", " + alias + ".created_at, " + alias + ".public_updated_at"
}

// entityVisible is the SQL predicate true when the viewer may see entity
// alias at all (its id, name, aliases and type): the DM and the system
// see every entity; a player every entity not first heard in a split
// scene (scene_only, migration 0032: set by extraction, cleared only by
// the DM's [Graph.PublishEntity]) and a scene_only one through a trace
// they may read ([view.tracedSceneSQL]). So a name first heard in a side
// scene reaches the scene's players and not the player outside it, until
// its full name is said where they were, the DM grants them a fact about
// it, or the DM publishes it.
//
// A campaign never split has no scene_only entity: the predicate's first
// arm holds for every row and the traces are never looked at.
//
// An NPC sees an entity by [view.npcEntity]'s rule.
func (w view) entityVisible(alias string) string {
	switch w.v.Role {
	case memory.RoleNPC:
		return w.npcEntity(alias, sqlLiteral(w.v.NPCID))
	case memory.RolePlayer:
		return "(NOT " + alias + ".scene_only OR " + alias + ".id = ANY ((SELECT glyphoxa_ids_nojit(" +
			sqlLiteral("SELECT ARRAY("+w.tracedSceneSQL()+")") + "))::text[]))"
	}
	return "true"
}

// tracedSceneSQL selects the ids of the campaign's scene_only entities the
// player viewer may read a trace of that names them: a canon line it was
// heard in (entity_evidence) said with the party together, or, for a
// player bound to their user id, heard by their character in its scene
// (heardBy: not merely their own line said at the table outside the scene,
// which extraction may count as evidence when it cannot tell which line
// named the entity); a chunk they may read ([view.chunkVisible]) whose text
// says the entity's full name ([namesSQL]: they read the name in it
// anyway); for a bound player, a fact the DM granted them that has it as
// an end.
//
// Only what says the full name counts. Extraction adds a line to the
// evidence only when it says the entity's full name
// (lifecycle/postsession); a chunk's mention (the chunker links by alias
// and by sound) or a fact (an extractor handed the known entities infers
// one from a line that never names it) is no trace: a generic alias ("the
// Abbess"), a sound-alike guess ("Corin") or an epithet said with the
// party together does not show "Veiled Abbess" to every player. A fact
// with an end the player may not see is hidden from them in turn
// ([view.endsVisibleSQL]), and so is the entity's id among a chunk's
// mentions ([view.chunkEntityIDs]): what a player is shown of the graph
// stays whole.
//
// Each trace is looked for as a set, among the scene_only entities' own
// evidence, chunk links and grants joined to them, never over the
// campaign's whole tables. [view.entityVisible] runs it through
// glyphoxa_ids_nojit (migration 0032: JIT off) in an uncorrelated
// subquery, an InitPlan: PostgreSQL computes it once per statement and
// only when a scene_only row asks (OR stops at a true NOT scene_only), so
// a campaign never split never computes it. Evaluated per row, the traces'
// subplans made the planner compile a 10k-entity list with JIT (1.5 to 5 s
// of a 0.1 s query); as sets in the statement itself, JIT still took 0.5
// to 1 s of it.
func (w view) tracedSceneSQL() string {
	c := sqlLiteral(w.campaign)
	heard := publicLineSQL
	if w.v.PlayerID != "" {
		heard = "(" + publicLineSQL + " OR " + heardBy(sqlLiteral(w.v.PlayerID)) + ")"
	}
	s := `WITH scene AS MATERIALIZED (SELECT s.id, s.name FROM entities s WHERE s.campaign_id = ` + c + ` AND s.scene_only)
		SELECT ee.entity_id FROM scene JOIN entity_evidence ee ON ee.campaign_id = ` + c + ` AND ee.entity_id = scene.id
		    JOIN transcript_entries t ON t.id = ee.entry_id
		WHERE NOT t.noncanon AND ` + heard + `
		UNION
		SELECT ece.entity_id FROM scene JOIN chunk_entities ece ON ece.campaign_id = ` + c + ` AND ece.entity_id = scene.id
		    JOIN chunks ec ON ec.campaign_id = ` + c + ` AND ec.id = ece.chunk_id
		WHERE ` + namesSQL("ec.content", "scene.name") + ` AND ` + w.chunkVisible("ec")
	if w.v.PlayerID != "" {
		s += `
		UNION
		SELECT scene.id FROM scene JOIN relationships egr ON egr.campaign_id = ` + c + ` AND scene.id IN (egr.source_id, egr.target_id)
		    AND egr.status IN ('active', 'retired')
		    JOIN player_grants eg ON eg.campaign_id = ` + c + ` AND eg.fact_id = egr.id AND eg.user_id = ` + sqlLiteral(w.v.PlayerID)
	}
	return s
}

// namesSQL is the SQL predicate true when text (an SQL expression) says
// name as whole words, compared as lifecycle/postsession's flatten
// compares them: without case, every run of characters other than letters
// and digits taken for one space. A name without a letter or digit names
// nothing.
func namesSQL(text, name string) string {
	flat := func(x string) string { return "lower(regexp_replace(" + x + ", '[^[:alnum:]]+', ' ', 'g'))" }
	return "(btrim(" + flat(name) + ") <> '' AND ' ' || " + flat(text) + " || ' ' LIKE '% ' || btrim(" + flat(name) + ") || ' %')"
}

// chunkEntityIDs is the SQL expression of the ids of the entities chunk
// alias mentions (chunk_entities), sorted, that the viewer may see
// ([view.entityVisible]): a player reading a chunk is not given the id of
// an entity first heard in a split scene they were not in (ids are slugs
// of names), nor an NPC one it may not see. The DM and the system get
// every id.
func (w view) chunkEntityIDs(alias string) string {
	visible := ""
	if !w.system() {
		visible = ` AND EXISTS (SELECT 1 FROM entities ve WHERE ve.campaign_id = ce.campaign_id AND ve.id = ce.entity_id AND ` +
			w.entityVisible("ve") + `)`
	}
	return `coalesce((SELECT array_agg(ce.entity_id ORDER BY ce.entity_id) FROM chunk_entities ce
		WHERE ce.campaign_id = ` + alias + `.campaign_id AND ce.chunk_id = ` + alias + `.id` + visible + `), '{}')`
}

// endsVisibleSQL is the SQL predicate true when the player viewer may see
// both ends of relationship alias ([view.entityVisible]): a fact names its
// ends, so one about an entity first heard in a split scene they were not
// in (an extractor's inference from a line said with the party together,
// a fact the DM wrote) is hidden from them with the entity. Only
// scene_only ends cost anything: in a campaign never split it is two
// index probes that find nothing to hide.
func (w view) endsVisibleSQL(alias string) string {
	return `NOT EXISTS (SELECT 1 FROM entities fx WHERE fx.campaign_id = ` + alias + `.campaign_id
		AND fx.id IN (` + alias + `.source_id, ` + alias + `.target_id) AND fx.scene_only AND NOT ` + w.entityVisible("fx") + `)`
}

// factVisible is the SQL predicate true when the viewer may see
// relationship alias: the DM sees every fact; players the facts that are
// not secret and neither pending (waiting for the DM's review) nor
// rejected, that were revealed where the player may read (factRevealed),
// and whose ends they may both see ([view.endsVisibleSQL]: a fact an
// extractor inferred from a public line about an entity of a split scene
// names it, so it is hidden from the players who may not see it); an NPC
// the facts [view.npcFact] allows it, never a pending or rejected one.
func (w view) factVisible(alias string) string {
	if w.system() {
		return "true"
	}
	if w.v.Role == memory.RolePlayer {
		return "(" + alias + ".attributes->'secret' IS DISTINCT FROM 'true'::jsonb AND " + alias +
			".status NOT IN ('pending', 'rejected') AND " + w.factRevealed(alias) + " AND " + w.endsVisibleSQL(alias) + ")"
	}
	return w.npcFact(alias, sqlLiteral(w.v.NPCID), alias+".campaign_id") + " AND " + alias + ".status NOT IN ('pending', 'rejected')"
}

// npcFact is the SQL predicate true when the NPC lit (an SQL literal
// or parameter) may know relationship alias of campaign campaign (an SQL
// expression; w.campaign is the same campaign, see [view.npcEntity]),
// whatever its status: a fact that is not secret, that any player may
// learn ([revealedToAnySQL]: not one told only in a split scene), and
// whose ends it may both see ([view.npcEntity]: not one an extractor drew,
// from a line said with the party together, about an entity first heard
// in a split scene); a secret fact it is an end of; and a fact whose
// known_by lists it (the DM's grants: [view.npcEntity] shows it their
// ends). What an NPC's model is given, a player hears: the NPC answers
// whoever talks to it, and a fact drawn only from a split scene would
// reach, through it, the players who were not there (even one about the
// NPC itself: what was said of it behind its back). An NPC that was in
// the scene knows what it heard there from its own witness log
// (lifecycle/witness) while the session lasts; for good, the DM lists it
// in the fact's known_by.
func (w view) npcFact(alias, lit, campaign string) string {
	a := alias + ".attributes"
	return "((" + a + "->'secret' IS DISTINCT FROM 'true'::jsonb AND " + revealedToAnySQL(alias, campaign) +
		" AND NOT EXISTS (SELECT 1 FROM entities fx WHERE fx.campaign_id = " + campaign +
		" AND fx.id IN (" + alias + ".source_id, " + alias + ".target_id) AND fx.scene_only AND NOT " + w.npcEntity("fx", lit) + "))" +
		" OR " + npcGrantedSQL(alias, lit) + ")"
}

// npcGrantedSQL is the SQL predicate true when relationship alias is one
// the DM gave the NPC lit to know whatever scene it was told in: a secret
// fact it is an end of, or a fact whose known_by lists it.
func npcGrantedSQL(alias, lit string) string {
	a := alias + ".attributes"
	return "((" + a + "->'secret' = 'true'::jsonb AND (" + alias + ".source_id = " + lit + " OR " + alias + ".target_id = " + lit + "))" +
		" OR coalesce(" + a + "->'known_by' ? " + lit + ", false))"
}

// npcEntity is the SQL predicate true when the NPC lit (an SQL literal or
// parameter) may see entity alias of the viewer's campaign (w.campaign):
// an entity any player may see ([view.entityVisible] of a player bound to
// no one: not first heard in a split scene, or named in full in a line
// or chunk every player may read), the NPC itself, and an end of a fact
// the DM gave it to know ([npcGrantedSQL], active or retired). It is the
// split-scene rule of facts ([view.npcFact]) for names: an NPC's model
// says what it is given to whoever talks to it, so a name first heard in
// a split scene would reach, through it, the players who were not there.
// A campaign never split has no scene_only entity, and the predicate
// holds at its first arm.
func (w view) npcEntity(alias, lit string) string {
	anyone := view{v: memory.PlayerViewer(), campaign: w.campaign}
	return "(" + anyone.entityVisible(alias) + " OR " + alias + ".id = " + lit +
		" OR EXISTS (SELECT 1 FROM relationships gr WHERE gr.campaign_id = " + alias + ".campaign_id" +
		" AND " + alias + ".id IN (gr.source_id, gr.target_id) AND gr.status IN ('active', 'retired') AND " + npcGrantedSQL("gr", lit) + "))"
}

// revealedToAnySQL is the SQL predicate true when any player may learn
// relationship alias from the lines it rests on ([revealedOn] with
// publicLineSQL). A campaign whose party was never split (no split
// presence row, an index probe computed once per statement when campaign
// is a parameter) reveals every fact.
func revealedToAnySQL(alias, campaign string) string {
	return "(NOT EXISTS (SELECT 1 FROM session_presence sp WHERE sp.campaign_id = " + campaign + " AND sp.split) OR " +
		revealedOn(alias, publicLineSQL) + ")"
}

// factRevealed is the SQL predicate true when a player may learn fact
// alias from the lines it rests on (fact_evidence): it rests on a line
// said while the party was not split (publicLineSQL: told to everyone),
// or every line it rests on is one the player may read
// ([view.lineVisible]; so also a fact resting on no line: the DM's own, an
// import's, a line since forgotten). A fact extracted only from the lines
// of a split scene reaches the scene's players and no one else: not a
// public recap, not the graph of a player who was not there (the DM grants
// it with /memory grant). Of split lines, one the player may read is not
// enough: extraction rests a fact on every scene line of its window when
// it cannot tell which it came from (lifecycle/postsession), and a player
// talking at the table outside the scene reads their own line. What a
// character knows ([Campaign.KnowledgeOf]) asks the same of the lines it
// witnessed.
func (w view) factRevealed(alias string) string { return revealedOn(alias, w.lineVisible()) }

// revealedOn is the SQL predicate true when fact alias rests on a line
// said with the party together (publicLineSQL) or only on lines for which
// line (an SQL predicate on transcript entry t) holds.
func revealedOn(alias, line string) string {
	return `(EXISTS (SELECT 1 FROM fact_evidence fe JOIN transcript_entries t ON t.id = fe.entry_id
		           WHERE fe.fact_id = ` + alias + `.id AND ` + publicLineSQL + `)
		OR NOT EXISTS (SELECT 1 FROM fact_evidence fe JOIN transcript_entries t ON t.id = fe.entry_id
		           WHERE fe.fact_id = ` + alias + `.id AND NOT ` + line + `))`
}

// factAttrs is the SQL expression of the attributes of relationship alias
// the viewer may read: secret keys are removed for everyone but the DM; a
// secret fact an NPC may see keeps its "secret": true marker and its other
// public attributes (the marker is taken off before glyphoxa_public, which
// would otherwise drop the whole object as secret).
//
// As in [publicAttrs], the function is called only where it can change
// something: an object whose text has no double quote followed by one of
// secretKeyStarts has no "secret" key and no secret at any depth, so the
// exact expression returns it as it is. (Attributes are objects; anything
// else takes the exact path.)
func (w view) factAttrs(alias string) string {
	if w.system() {
		return alias + ".attributes"
	}
	a := alias + ".attributes"
	public := func(a string) string {
		return "CASE WHEN " + a + "::text ~* '\"(" + secretKeyStarts + ")' OR jsonb_typeof(" + a + ") <> 'object' THEN " +
			"(glyphoxa_public_attributes(" + a + " - 'secret') || CASE WHEN " + a + "->'secret' = 'true'::jsonb THEN '{\"secret\": true}'::jsonb ELSE '{}'::jsonb END)" +
			" ELSE " + a + " END"
	}
	return "CASE WHEN " + w.quoteUnreadable(alias) + " THEN " + public("("+a+" - '"+strings.Join(quoteKeys[:], "' - '")+"')") +
		" ELSE " + public(a) + " END"
}

// quoteKeys are the attributes of a fact that quote a line it rests on
// (extraction's and the ledger's "evidence", the ledger's "said_at").
var quoteKeys = [...]string{"evidence", "said_at"}

// quoteUnreadable is the SQL predicate true when relationship alias
// carries a quote (quoteKeys) and rests on a line the player viewer may
// not read ([view.lineVisible]): a fact a player may read (it was also
// revealed where they were) whose quote may be of a split scene they were
// not in (a debt restated in the scene, extraction's quote of several
// lines). Its quote is then left out for them: the store cannot tell
// which line a quote comes from, so a player reads one only when every
// line the fact rests on is one they may read.
func (w view) quoteUnreadable(alias string) string {
	a := alias + ".attributes"
	return "((" + a + " ? '" + quoteKeys[0] + "' OR " + a + " ? '" + quoteKeys[1] + "') AND EXISTS (SELECT 1 FROM fact_evidence fe" +
		" JOIN transcript_entries t ON t.id = fe.entry_id WHERE fe.fact_id = " + alias + ".id AND NOT " + w.quoteLine() + "))"
}

// quoteLine is the SQL predicate true when the viewer may read a quote of
// transcript entry t: a player the lines they may read
// ([view.lineVisible]); an NPC, whose model's words any player in its
// scene hears, the lines any player may read (publicLineSQL).
func (w view) quoteLine() string {
	if w.v.Role == memory.RoleNPC {
		return publicLineSQL
	}
	return w.lineVisible()
}

// relCols are the relationship columns of r as the viewer reads them, in
// the order scanRel expects; the stamp is the viewer's ([view.updatedCol]),
// named updated_at.
func (w view) relCols() string {
	c := strings.Replace(relColumns, "r.attributes", w.factAttrs("r"), 1)
	if w.system() {
		return c
	}
	return strings.Replace(c, "r.updated_at", w.updatedCol("r")+" AS updated_at", 1)
}

// factJSON is to_jsonb(r) with the attributes and the stamp
// ([view.updatedCol]) the viewer may read.
func (w view) factJSON(alias string) string {
	if w.system() {
		return "(to_jsonb(" + alias + ") - 'public_updated_at')"
	}
	return "((to_jsonb(" + alias + ") - 'public_updated_at') || jsonb_build_object('attributes', " + w.factAttrs(alias) +
		", 'updated_at', " + w.updatedCol(alias) + "))"
}

// As returns this campaign's layers bound to viewer v: every read through
// them returns only what v may see (see [memory.Viewer]). It refuses a
// viewer without a role, and a handle already bound to a player or an NPC
// binds only to the same viewer again: a narrower handle never widens.
func (c *Campaign) As(v memory.Viewer) (*Campaign, error) {
	if err := v.Validate(); err != nil {
		return nil, fmt.Errorf("binding campaign %q to a viewer: %w", c.id, err)
	}
	if !c.view.system() && v != c.view.v {
		return nil, fmt.Errorf("binding campaign %q to %s: %w: a handle bound to %s cannot read as another viewer",
			c.id, v, memory.ErrForbidden, c.view.v)
	}
	return newCampaign(c.store, c.db, c.id, c.db.gate, view{v: v}), nil
}

// Viewer is the viewer the campaign is bound to; the zero Viewer for the
// system view.
func (c *Campaign) Viewer() memory.Viewer { return c.view.v }

// dmOnly refuses a change only the DM (or the server's own code) may make
// when the graph is bound to a player or an NPC: they write through
// WriteFact, which makes their facts proposals, and never confirm, reject,
// retire, edit or delete.
func (g *Graph) dmOnly(what string) error {
	if g.view.system() {
		return nil
	}
	return fmt.Errorf("%s: %w: for the DM only (this handle reads as %s)", what, memory.ErrForbidden, g.view.v)
}

// mayWriteAs refuses a fact writer the viewer cannot be: a handle bound to
// a player writes only as a player, one bound to an NPC only as that NPC
// (their writes are proposals); the DM's and the system's handles write as
// anyone. So a player's handle cannot claim the DM's, the import's or
// extraction's right to write canon.
func (w view) mayWriteAs(wr memory.Writer) error {
	switch {
	case w.system():
		return nil
	case w.v.Role == memory.RolePlayer && wr.Role == memory.WriterPlayer:
		return nil
	case w.v.Role == memory.RoleNPC && wr.Role == memory.WriterNPC && wr.ID == w.v.NPCID:
		return nil
	}
	return fmt.Errorf("%w: a handle bound to %s cannot write as %s", memory.ErrForbidden, w.v, wr.Key())
}
