package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/memory"
	memaccess "github.com/glyphoxa/glyphoxa/memory/access"
)

// SemanticSearcher searches a campaign's memory by meaning, through the
// handle of the member who asks (camp, bound to their viewer): a player's
// search reads only what the store lets that player read, so an
// implementation cannot be wired to read the campaign as the DM for
// everyone.
type SemanticSearcher interface {
	SearchMeaning(ctx context.Context, camp *memaccess.Campaign, query string, k int) ([]SearchHit, error)
}

// SearchHit is one semantic search result.
type SearchHit struct {
	SessionID string
	At        time.Time
	Content   string
	Score     float64
}

// factsPerPage leaves room for one row of buttons per fact plus navigation
// within Discord's five component rows.
const factsPerPage = 4

func (b *Bot) memoryCommand(ctx context.Context, i *discordgo.Interaction, g Guild, c command) {
	if c.path == "memory entity edit" {
		b.entityEditModal(ctx, i, g, c.str("entity"))
		return
	}
	if !b.deferReply(i, true) {
		return
	}
	// Bound to the member's viewer: a player's search reads the campaign
	// as a player sees it.
	camp, err := b.campaignFor(ctx, g, i)
	if err != nil {
		b.finishErr(i, err)
		return
	}
	graph := camp.Graph()
	switch c.path {
	case "memory pending":
		content, embed, comps, err := b.pendingPage(ctx, camp, c.str("session"), 0)
		if err != nil {
			b.finishErr(i, err)
			return
		}
		b.finish(i, true, content, embeds(embed), comps)
	case "memory conflicts":
		content, embed, comps, err := b.conflictPage(ctx, camp, 0)
		if err != nil {
			b.finishErr(i, err)
			return
		}
		b.finish(i, true, content, embeds(embed), comps)
	case "memory confirm", "memory reject":
		id, err := parseFactID(c.str("fact"))
		if err != nil {
			b.finishErr(i, err)
			return
		}
		var f memory.Relationship
		verb := "Confirmed"
		if c.path == "memory confirm" {
			f, err = graph.ConfirmFact(ctx, id)
		} else {
			f, err = graph.RejectFact(ctx, id)
			verb = "Rejected"
		}
		if err != nil {
			b.finishErr(i, err)
			return
		}
		b.finish(i, true, fmt.Sprintf("%s %s", verb, b.describeFact(ctx, graph, f)), nil, nil)
	case "memory entity add", "memory entity merge", "memory entity retire", "memory entity reveal":
		b.entityCommand(ctx, i, g, camp, c)
	case "memory entity show":
		embed, err := b.entityEmbedAsOf(ctx, graph, c.str("entity"), c.str("as_of"))
		if err != nil {
			b.finishErr(i, err)
			return
		}
		b.finish(i, true, "", embeds(embed), nil)
	case "memory fact add":
		src, err := resolveEntity(ctx, graph, c.str("subject"))
		if err != nil {
			b.finishErr(i, err)
			return
		}
		dst, err := resolveEntity(ctx, graph, c.str("object"))
		if err != nil {
			b.finishErr(i, err)
			return
		}
		rel := relType(c.str("relation"))
		if rel == "" {
			b.finishErr(i, errors.New("the relation needs letters, e.g. LOCATED_AT"))
			return
		}
		// Through the fact timeline: a canon fact this one contradicts (the
		// NPC was elsewhere) is retired as of the running session, linked and
		// kept for "as of", never overwritten.
		w, err := graph.WriteFact(ctx, memory.DM(user(i).ID), memory.Relationship{SourceID: src.ID, TargetID: dst.ID, Type: rel,
			Attributes: map[string]any{"added_by": user(i).ID},
			Provenance: memory.Provenance{SessionID: b.currentSession(g.ID), Timestamp: time.Now(), Confidence: 1,
				Source: memory.SourceStated, DMConfirmed: true}}, c.str("reason"))
		if err != nil {
			b.finishErr(i, err)
			return
		}
		msg := "Added as canon: " + b.describeFact(ctx, graph, w.Fact)
		for _, cf := range w.Conflicts {
			msg += "\nIt supersedes " + b.describeFact(ctx, graph, cf.OldFact) + " (retired, kept for \"as of\")"
		}
		b.finish(i, true, msg, nil, nil)
	case "memory fact list":
		content, err := b.factList(ctx, graph, c.str("entity"), c.str("as_of"))
		if err != nil {
			b.finishErr(i, err)
			return
		}
		b.finish(i, true, content, nil, nil)
	case "memory changes":
		content, err := b.changes(ctx, camp, c.str("session"))
		if err != nil {
			b.finishErr(i, err)
			return
		}
		b.finish(i, true, content, nil, nil)
	case "memory fact retire":
		id, err := parseFactID(c.str("fact"))
		if err != nil {
			b.finishErr(i, err)
			return
		}
		f, err := graph.RetireFact(ctx, id, b.currentSession(g.ID))
		if err != nil {
			b.finishErr(i, err)
			return
		}
		b.finish(i, true, "Retired (it held until now): "+b.describeFact(ctx, graph, f), nil, nil)
	case "memory forget fact":
		id, err := parseFactID(c.str("fact"))
		if err != nil {
			b.finishErr(i, err)
			return
		}
		f, err := graph.RejectFact(ctx, id)
		if err != nil {
			b.finishErr(i, err)
			return
		}
		b.finish(i, true, "Declared non-canon (it never happened): "+b.describeFact(ctx, graph, f), nil, nil)
	case "memory forget span":
		b.forgetSpan(ctx, i, g, camp, c)
	case "memory search":
		b.search(ctx, i, g, camp, c.str("query"), c.str("mode"))
	case "memory grant":
		b.memoryGrant(ctx, i, g, camp, c)
	case "memory known-by":
		b.memoryKnownBy(ctx, i, camp, c)
	default:
		b.finishErr(i, fmt.Errorf("unknown command /%s", c.path))
	}
}

func embeds(e *discordgo.MessageEmbed) []*discordgo.MessageEmbed {
	if e == nil {
		return nil
	}
	return []*discordgo.MessageEmbed{e}
}

// currentSession is the id of the guild's running session, or "".
func (b *Bot) currentSession(guildID string) string {
	if b.deps.Voice == nil {
		return ""
	}
	if st, ok := b.deps.Voice.Status(guildID); ok {
		return st.SessionID
	}
	return ""
}

// parseFactID reads "12", "#12" or an autocomplete value.
func parseFactID(s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(s), "#"), 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%q is not a fact; pick one from the list or give its number, e.g. #12", s)
	}
	return id, nil
}

// relType normalises a relation to UPPER_SNAKE_CASE.
func relType(s string) string {
	return strings.ToUpper(strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}), "_"))
}

// resolveEntity finds an entity by id (autocomplete value), name or alias.
func resolveEntity(ctx context.Context, g *memaccess.Graph, s string) (memory.Entity, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return memory.Entity{}, errors.New("name an entity")
	}
	if e, err := g.Entity(ctx, s); err == nil {
		return e, nil
	}
	cands, err := g.FindEntities(ctx, memory.EntityFilter{Name: s, Limit: 10})
	if err == nil && len(cands) == 0 {
		// A retired entity is out of the name lists, but its name still
		// finds it.
		cands, err = g.FindEntities(ctx, memory.EntityFilter{Name: s, Limit: 10, IncludeRetired: true})
	}
	if err != nil {
		return memory.Entity{}, err
	}
	for _, e := range cands {
		if strings.EqualFold(e.Name, s) || slices.ContainsFunc(e.Aliases, func(a string) bool { return strings.EqualFold(a, s) }) {
			return e, nil
		}
	}
	if len(cands) == 1 {
		return cands[0], nil
	}
	if len(cands) > 1 {
		names := make([]string, len(cands))
		for k, e := range cands {
			names[k] = e.Name
		}
		return memory.Entity{}, fmt.Errorf("%q could be %s; pick one from the list", s, strings.Join(names, ", "))
	}
	return memory.Entity{}, fmt.Errorf("nothing in this campaign is called %q", s)
}

// names returns display names for entity ids.
func names(ctx context.Context, g *memaccess.Graph, ids ...string) map[string]string {
	out := map[string]string{}
	es, err := g.FindEntities(ctx, memory.EntityFilter{IDs: ids, IncludeRetired: true})
	if err == nil {
		for _, e := range es {
			out[e.ID] = e.Name
		}
	}
	for _, id := range ids {
		if out[id] == "" {
			out[id] = id
		}
	}
	return out
}

// describeFact renders "#12 Vexa Thorn —MEMBER_OF→ Ashen Circle".
func (b *Bot) describeFact(ctx context.Context, g *memaccess.Graph, f memory.Relationship) string {
	n := names(ctx, g, f.SourceID, f.TargetID)
	return fmt.Sprintf("**#%d** %s —%s→ %s", f.ID, n[f.SourceID], f.Type, n[f.TargetID])
}

// provenanceLine says where a fact came from: confidence, how, and when.
func provenanceLine(f memory.Relationship) string {
	parts := []string{fmt.Sprintf("confidence %.2f", f.Provenance.Confidence), string(f.Provenance.Source)}
	if f.Provenance.SessionID != "" {
		parts = append(parts, "session "+f.Provenance.SessionID)
	}
	if !f.Provenance.Timestamp.IsZero() {
		parts = append(parts, f.Provenance.Timestamp.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if p, ok := f.Attributes["proposed_by"].(string); ok {
		parts = append(parts, "proposed by "+p)
	}
	return strings.Join(parts, " · ")
}

// pendingPage renders one page of pending facts with review buttons.
func (b *Bot) pendingPage(ctx context.Context, camp *memaccess.Campaign, session string, page int) (string, *discordgo.MessageEmbed, []discordgo.MessageComponent, error) {
	g := camp.Graph()
	facts, err := g.PendingFacts(ctx, memory.FactFilter{SessionID: session})
	if err != nil {
		return "", nil, nil, err
	}
	if len(facts) == 0 {
		return "✅ No facts are waiting for review.", nil, []discordgo.MessageComponent{}, nil
	}
	pages := (len(facts) + factsPerPage - 1) / factsPerPage
	page = min(max(page, 0), pages-1)
	shown := facts[page*factsPerPage : min(len(facts), (page+1)*factsPerPage)]
	var ids []string
	for _, f := range shown {
		ids = append(ids, f.SourceID, f.TargetID)
	}
	n := names(ctx, g, ids...)
	shownIDs := make([]int64, len(shown))
	for k, f := range shown {
		shownIDs[k] = f.ID
	}
	inConflict, err := g.OpenConflictsOf(ctx, shownIDs)
	if err != nil {
		return "", nil, nil, err
	}
	embed := &discordgo.MessageEmbed{
		Title:  fmt.Sprintf("Facts waiting for your review (%d)", len(facts)),
		Color:  0xE0A526,
		Footer: &discordgo.MessageEmbedFooter{Text: fmt.Sprintf("Page %d of %d · confirmed facts become canon for the NPCs", page+1, pages)},
	}
	var comps []discordgo.MessageComponent
	for _, f := range shown {
		value := provenanceLine(f)
		if cs := inConflict[f.ID]; len(cs) > 0 {
			value += "\n" + conflictNote(cs)
		}
		if ev, err := g.Evidence(ctx, f.ID); err == nil && len(ev) > 0 {
			e := ev[0]
			value += fmt.Sprintf("\n> %s — %s, %s", truncate(e.Text, 300), e.SpeakerName, e.At.UTC().Format("15:04"))
		}
		embed.Fields = append(embed.Fields, &discordgo.MessageEmbedField{
			Name:  fmt.Sprintf("#%d  %s —%s→ %s", f.ID, n[f.SourceID], f.Type, n[f.TargetID]),
			Value: value,
		})
		suffix := fmt.Sprintf("%d:%d:%s", f.ID, page, session)
		comps = append(comps, discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: fmt.Sprintf("Confirm #%d", f.ID), Style: discordgo.SuccessButton, CustomID: "pend:c:" + suffix},
			discordgo.Button{Label: fmt.Sprintf("Reject #%d", f.ID), Style: discordgo.DangerButton, CustomID: "pend:r:" + suffix},
			discordgo.Button{Label: fmt.Sprintf("Edit #%d", f.ID), Style: discordgo.SecondaryButton, CustomID: "pend:e:" + suffix},
		}})
	}
	// One row: paging, then the bulk review of every pending fact the page
	// lists (of its session, if one was asked for).
	var row []discordgo.MessageComponent
	if pages > 1 {
		row = append(row,
			discordgo.Button{Label: "◀ Previous", Style: discordgo.SecondaryButton, Disabled: page == 0,
				CustomID: fmt.Sprintf("pend:p:0:%d:%s", page-1, session)},
			discordgo.Button{Label: "Next ▶", Style: discordgo.SecondaryButton, Disabled: page == pages-1,
				CustomID: fmt.Sprintf("pend:p:0:%d:%s", page+1, session)})
	}
	scope := "all"
	if session != "" {
		scope = "all from " + truncate(session, 40)
	}
	row = append(row,
		discordgo.Button{Label: fmt.Sprintf("Confirm %s (%d)", scope, min(len(facts), maxBulk)), Style: discordgo.SuccessButton,
			CustomID: fmt.Sprintf("pend:a:0:%d:%s", page, session)},
		discordgo.Button{Label: fmt.Sprintf("Reject %s (%d)", scope, min(len(facts), maxBulk)), Style: discordgo.DangerButton,
			CustomID: fmt.Sprintf("pend:x:0:%d:%s", page, session)})
	comps = append(comps, discordgo.ActionsRow{Components: row})
	return "", embed, comps, nil
}

// lastRow is the last row of comps, if it is a row.
func lastRow(comps []discordgo.MessageComponent) (discordgo.ActionsRow, bool) {
	if len(comps) == 0 {
		return discordgo.ActionsRow{}, false
	}
	r, ok := comps[len(comps)-1].(discordgo.ActionsRow)
	return r, ok
}

// maxBulk bounds one bulk review (the store's batch limit).
const maxBulk = 1000

// conflictNote tells a pending fact's card that the fact is in open
// conflicts and how reviewing it settles them.
func conflictNote(conflicts []int64) string {
	ids := make([]string, len(conflicts))
	for k, c := range conflicts {
		ids[k] = fmt.Sprintf("%d", c)
	}
	return "⚔️ in open conflict " + strings.Join(ids, ", ") + " (`/memory conflicts`): confirming it keeps it and retires the " +
		"other fact; rejecting it keeps the other."
}

// bulkReview confirms (or rejects) every pending fact of session (all when
// empty), up to maxBulk, in one batch, and returns the note and an Undo
// button for it.
func (b *Bot) bulkReview(ctx context.Context, i *discordgo.Interaction, camp *memaccess.Campaign, session string, confirm bool, page int) (string, []discordgo.MessageComponent, error) {
	g := camp.Graph()
	facts, err := g.PendingFacts(ctx, memory.FactFilter{SessionID: session, Limit: maxBulk + 1})
	if err != nil {
		return "", nil, err
	}
	if len(facts) == 0 {
		return "Nothing is waiting for review.", nil, nil
	}
	more := len(facts) > maxBulk
	facts = facts[:min(len(facts), maxBulk)]
	ids := make([]int64, len(facts))
	for k, f := range facts {
		ids[k] = f.ID
	}
	action, verb := memaccess.ReviewConfirm, "✅ Confirmed"
	if !confirm {
		action, verb = memaccess.ReviewReject, "✖ Rejected"
	}
	batch, err := g.ReviewFacts(ctx, action, ids, userOf(i))
	if err != nil {
		return "", nil, err
	}
	note := fmt.Sprintf("%s %d fact(s) in one batch (#%d); their conflicts are settled with them.", verb, len(batch.Done), batch.ID)
	if more {
		note += fmt.Sprintf(" More than %d were waiting: press again for the rest.", maxBulk)
	}
	undo := discordgo.Button{Label: fmt.Sprintf("↩ Undo batch #%d", batch.ID),
		Style: discordgo.SecondaryButton, CustomID: fmt.Sprintf("pend:u:%d:%d:%s", batch.ID, page, session)}
	return note, []discordgo.MessageComponent{undo}, nil
}

// userOf is the Discord user id behind an interaction.
func userOf(i *discordgo.Interaction) string {
	switch {
	case i.Member != nil && i.Member.User != nil:
		return i.Member.User.ID
	case i.User != nil:
		return i.User.ID
	}
	return ""
}

// pendingButton handles Confirm / Reject / Edit / page buttons. The
// custom id is action:factID:page:session.
func (b *Bot) pendingButton(ctx context.Context, i *discordgo.Interaction, g Guild, rest string) {
	parts := strings.SplitN(rest, ":", 4)
	if len(parts) != 4 {
		b.reply(i, true, "This button has expired.")
		return
	}
	action, session := parts[0], parts[3]
	id, _ := strconv.ParseInt(parts[1], 10, 64)
	page, _ := strconv.Atoi(parts[2])
	camp, err := b.campaignFor(ctx, g, i)
	if err != nil {
		b.reply(i, true, "⚠️ "+errText(err))
		return
	}
	var note string
	switch action {
	case "c", "r", "a", "x", "u":
		// A review changes the campaign's memory: acknowledged first, it
		// runs only if Discord still takes the answer (see ack).
		if !b.ack(i, true) {
			return
		}
	}
	switch action {
	case "c", "r":
		var f memory.Relationship
		if action == "c" {
			f, err = camp.Graph().ConfirmFact(ctx, id)
			note = "✅ Confirmed "
		} else {
			f, err = camp.Graph().RejectFact(ctx, id)
			note = "✖ Rejected "
		}
		if err != nil {
			b.reply(i, true, "⚠️ "+errText(err))
			return
		}
		note += b.describeFact(ctx, camp.Graph(), f)
	case "e":
		b.factEditModal(ctx, i, camp, id, page, session)
		return
	case "a", "x":
		var undo []discordgo.MessageComponent
		note, undo, err = b.bulkReview(ctx, i, camp, session, action == "a", page)
		if err != nil {
			b.reply(i, true, "⚠️ "+errText(err))
			return
		}
		b.updatePending(ctx, i, camp, session, page, note, undo...)
		return
	case "u":
		batch, err := camp.Graph().UndoReview(ctx, id)
		if err != nil {
			b.reply(i, true, "⚠️ "+errText(err))
			return
		}
		note = fmt.Sprintf("↩️ Undid batch #%d: %d fact(s) are back as they were before it.", batch.ID, len(batch.Facts))
	case "p":
	default:
		b.reply(i, true, "This button has expired.")
		return
	}
	b.updatePending(ctx, i, camp, session, page, note)
}

// updatePending replaces the message the button was on with the fresh page.
func (b *Bot) updatePending(ctx context.Context, i *discordgo.Interaction, camp *memaccess.Campaign, session string, page int, note string, extra ...discordgo.MessageComponent) {
	content, embed, comps, err := b.pendingPage(ctx, camp, session, page)
	if err != nil {
		b.reply(i, true, "⚠️ "+errText(err))
		return
	}
	// Extra buttons (Undo) join the last row, the bulk row, which has room.
	if len(extra) > 0 {
		if last, ok := lastRow(comps); ok && len(last.Components)+len(extra) <= 5 {
			last.Components = append(last.Components, extra...)
			comps[len(comps)-1] = last
		} else {
			comps = append(comps, discordgo.ActionsRow{Components: extra})
		}
	}
	if note != "" {
		content = strings.TrimSpace(note + "\n" + content)
	}
	es := embeds(embed)
	if es == nil {
		es = []*discordgo.MessageEmbed{}
	}
	b.respond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: content, Embeds: es, Components: comps}})
}

func textInput(id, label, value string, style discordgo.TextInputStyle, required bool, maxLen int) discordgo.ActionsRow {
	return discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.TextInput{
		CustomID: id, Label: label, Style: style, Value: truncate(value, maxLen), Required: required, MaxLength: maxLen}}}
}

func (b *Bot) factEditModal(ctx context.Context, i *discordgo.Interaction, camp *memaccess.Campaign, id int64, page int, session string) {
	f, err := camp.Graph().Fact(ctx, id)
	if err != nil {
		b.reply(i, true, "⚠️ "+errText(err))
		return
	}
	n := names(ctx, camp.Graph(), f.SourceID, f.TargetID)
	b.respond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseModal, Data: &discordgo.InteractionResponseData{
		CustomID: fmt.Sprintf("factedit:%d:%d:%s", id, page, session),
		Title:    truncate(fmt.Sprintf("Correct fact #%d", id), 45),
		Components: []discordgo.MessageComponent{
			textInput("subject", "Who or what", n[f.SourceID], discordgo.TextInputShort, true, 100),
			textInput("relation", "Relation (e.g. LOCATED_AT)", f.Type, discordgo.TextInputShort, true, 100),
			textInput("object", "Who or what", n[f.TargetID], discordgo.TextInputShort, true, 100),
		},
	}})
}

// factEditSubmit stores the DM's corrected fact as canon.
func (b *Bot) factEditSubmit(ctx context.Context, i *discordgo.Interaction, g Guild, rest string, v map[string]string) {
	parts := strings.SplitN(rest, ":", 3)
	if len(parts) != 3 {
		b.reply(i, true, "This form has expired.")
		return
	}
	id, _ := strconv.ParseInt(parts[0], 10, 64)
	page, _ := strconv.Atoi(parts[1])
	session := parts[2]
	if !b.ack(i, true) {
		return
	}
	camp, err := b.campaignFor(ctx, g, i)
	if err != nil {
		b.reply(i, true, "⚠️ "+errText(err))
		return
	}
	graph := camp.Graph()
	f, err := EditFact(ctx, graph, id, v["subject"], v["relation"], v["object"], user(i).ID)
	if err == nil {
		b.updatePending(ctx, i, camp, session, page, "✏️ Corrected and confirmed "+b.describeFact(ctx, graph, f))
		return
	}
	// Nothing was changed; say why, privately.
	b.reply(i, true, fmt.Sprintf("⚠️ Fact #%d is unchanged: %v", id, err))
}

// EditFact records the DM's correction of fact id: subject and object are
// entity ids, names or aliases, relation is normalised to UPPER_SNAKE_CASE.
// The old fact is rejected and the corrected one becomes DM-confirmed canon
// (see [memaccess.Graph]'s ReplaceFact). The Discord Edit button and the web
// console both call it.
func EditFact(ctx context.Context, g *memaccess.Graph, id int64, subject, relation, object, editor string) (memory.Relationship, error) {
	src, err := resolveEntity(ctx, g, subject)
	if err != nil {
		return memory.Relationship{}, err
	}
	dst, err := resolveEntity(ctx, g, object)
	if err != nil {
		return memory.Relationship{}, err
	}
	rel := relType(relation)
	if rel == "" {
		return memory.Relationship{}, errors.New("the relation needs letters, e.g. LOCATED_AT")
	}
	return g.ReplaceFact(ctx, id, memory.Relationship{SourceID: src.ID, TargetID: dst.ID, Type: rel,
		Attributes: map[string]any{"edited_by": editor}})
}

func (b *Bot) entityEmbed(ctx context.Context, g *memaccess.Graph, ref string) (*discordgo.MessageEmbed, error) {
	return b.entityEmbedAsOf(ctx, g, ref, "")
}

// entityEmbedAsOf shows an entity with its facts now, or with those that
// held in session asOf.
func (b *Bot) entityEmbedAsOf(ctx context.Context, g *memaccess.Graph, ref, asOf string) (*discordgo.MessageEmbed, error) {
	e, err := resolveEntity(ctx, g, ref)
	if err != nil {
		return nil, err
	}
	embed := &discordgo.MessageEmbed{Title: fmt.Sprintf("%s (%s)", e.Name, e.Type), Color: 0x5865F2,
		Footer: &discordgo.MessageEmbedFooter{Text: "id " + e.ID}}
	var desc []string
	if len(e.Aliases) > 0 {
		desc = append(desc, "Also called: "+strings.Join(e.Aliases, ", "))
	}
	if scene, err := g.SceneOnly(ctx, e.ID); err == nil && scene {
		desc = append(desc, "*First heard in a split scene: players who were not there do not see it* (`/memory entity reveal`)")
	}
	keys := make([]string, 0, len(e.Attributes))
	for k := range e.Attributes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		desc = append(desc, fmt.Sprintf("**%s**: %v", k, e.Attributes[k]))
	}
	embed.Description = strings.Join(desc, "\n")
	var rels []memory.Relationship
	if asOf != "" {
		var label string
		rels, label, err = g.FactsAsOfRef(ctx, e.ID, asOf)
		embed.Title += " as of " + label
		rels = rels[:min(len(rels), 20)]
	} else {
		rels, err = g.Relationships(ctx, e.ID, memory.TraversalOpts{Limit: 20})
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, r := range rels {
		ids = append(ids, r.SourceID, r.TargetID)
	}
	n := names(ctx, g, ids...)
	for _, r := range rels {
		embed.Fields = append(embed.Fields, &discordgo.MessageEmbedField{
			Name:  fmt.Sprintf("#%d %s —%s→ %s", r.ID, n[r.SourceID], r.Type, n[r.TargetID]),
			Value: provenanceLine(r),
		})
	}
	return embed, nil
}

func (b *Bot) entityEditModal(ctx context.Context, i *discordgo.Interaction, g Guild, ref string) {
	camp, err := b.campaignFor(ctx, g, i)
	if err != nil {
		b.reply(i, true, "⚠️ "+errText(err))
		return
	}
	e, err := resolveEntity(ctx, camp.Graph(), ref)
	if err != nil {
		b.reply(i, true, "⚠️ "+errText(err))
		return
	}
	attrs := ""
	if len(e.Attributes) > 0 {
		out, _ := yaml.Marshal(e.Attributes)
		attrs = string(out)
	}
	b.respond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseModal, Data: &discordgo.InteractionResponseData{
		CustomID: "entedit:" + e.ID,
		Title:    truncate("Edit "+e.Name, 45),
		Components: []discordgo.MessageComponent{
			textInput("name", "Name", e.Name, discordgo.TextInputShort, true, 100),
			textInput("kind", "Kind (npc, location, faction, item, …)", e.Type, discordgo.TextInputShort, false, 50),
			textInput("aliases", "Aliases, comma-separated", strings.Join(e.Aliases, ", "), discordgo.TextInputShort, false, 400),
			textInput("attributes", "Attributes (YAML: key: value)", attrs, discordgo.TextInputParagraph, false, 4000),
		},
	}})
}

// entityEditSubmit applies the modal through EditEntity; invalid input
// changes nothing.
func (b *Bot) entityEditSubmit(ctx context.Context, i *discordgo.Interaction, g Guild, id string, v map[string]string) {
	if !b.ack(i, false) {
		return
	}
	camp, err := b.campaignFor(ctx, g, i)
	if err != nil {
		b.reply(i, true, "⚠️ "+errText(err))
		return
	}
	e, err := EditEntity(ctx, camp, id, v["name"], v["kind"], v["aliases"], v["attributes"], user(i).ID)
	if err != nil {
		b.reply(i, true, "⚠️ Nothing was changed: "+errText(err))
		return
	}
	embed, err := b.entityEmbed(ctx, camp.Graph(), e.ID)
	if err != nil {
		b.reply(i, true, "Saved "+e.Name+".")
		return
	}
	b.reply(i, true, "Saved.", embed)
}

func (b *Bot) forgetSpan(ctx context.Context, i *discordgo.Interaction, g Guild, camp *memaccess.Campaign, c command) {
	sess, err := camp.Sessions().Session(ctx, c.str("session"))
	if err != nil {
		b.finishErr(i, err)
		return
	}
	from, err1 := clockOn(sess.StartedAt, c.str("from"))
	to, err2 := clockOn(sess.StartedAt, c.str("to"))
	if err := errors.Join(err1, err2); err != nil {
		b.finishErr(i, err)
		return
	}
	if to.Before(from) {
		to = to.Add(24 * time.Hour) // a session past midnight
	}
	n, err := camp.Sessions().MarkNonCanon(ctx, sess.ID, from, to.Add(59*time.Second))
	if err != nil {
		b.finishErr(i, err)
		return
	}
	msg := fmt.Sprintf("Marked %d lines of session %s (%s–%s UTC) as non-canon. They stay in the record but NPCs, recaps and search leave them out.",
		n, sess.ID, from.Format("15:04"), to.Format("15:04"))
	if n > 0 && b.deps.Reprocess != nil {
		if err := b.deps.Reprocess(ctx, g.Campaign, sess.ID); err != nil {
			msg += fmt.Sprintf("\n⚠️ Rebuilding the session's memory failed (%s); run `glyphoxa process --campaign %s`.", errText(err), g.Campaign)
		}
	}
	b.finish(i, true, msg, nil, nil)
}

// clockOn puts an HH:MM (UTC) on the day a session started.
func clockOn(day time.Time, hhmm string) (time.Time, error) {
	t, err := time.Parse("15:04", strings.TrimSpace(hhmm))
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a time; write HH:MM, e.g. 20:15", hhmm)
	}
	d := day.UTC()
	return time.Date(d.Year(), d.Month(), d.Day(), t.Hour(), t.Minute(), 0, 0, time.UTC), nil
}

func (b *Bot) search(ctx context.Context, i *discordgo.Interaction, g Guild, camp *memaccess.Campaign, query, mode string) {
	if mode == "" {
		mode = "both"
	}
	var out strings.Builder
	if mode == "text" || mode == "both" {
		hits, err := camp.Sessions().Search(ctx, query, memory.SearchOpts{Limit: 8})
		if err != nil {
			b.finishErr(i, err)
			return
		}
		fmt.Fprintf(&out, "**Said at the table** (%d)\n", len(hits))
		for _, h := range hits {
			fmt.Fprintf(&out, "• %s %s — %s: %s\n", h.Entry.SessionID, h.Entry.At.UTC().Format("2006-01-02 15:04"),
				h.Entry.SpeakerName, truncate(h.Entry.Text, 300))
		}
	}
	if mode == "semantic" || mode == "both" {
		if b.deps.Searcher == nil {
			out.WriteString("\n_Search by meaning needs an embedding provider (providers.embeddings)._\n")
		} else {
			hits, err := b.deps.Searcher.SearchMeaning(ctx, camp, query, 5)
			if err != nil {
				b.finishErr(i, err)
				return
			}
			fmt.Fprintf(&out, "\n**Related memories** (%d)\n", len(hits))
			for _, h := range hits {
				fmt.Fprintf(&out, "• %s %s — %s\n", h.SessionID, h.At.UTC().Format("2006-01-02 15:04"), truncate(h.Content, 400))
			}
		}
	}
	b.finish(i, true, out.String(), nil, nil)
}
