package bot_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/memory"
)

// cardVoice is a VoiceSessions that raises continuity cards as the voice
// session manager does: on its board, posted through the request's
// Contradicted.
type cardVoice struct {
	bot.VoiceSessions
	board        *continuity.Board
	mu           sync.Mutex
	contradicted func(continuity.Card) bool
	forgotten    func(string, memory.ForgetReport)
}

func (v *cardVoice) Start(_ context.Context, req bot.StartRequest) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.contradicted = req.Contradicted
	v.forgotten = req.Forgotten
	return nil
}

func (v *cardVoice) Status(string) (bot.SessionStatus, bool) {
	return bot.SessionStatus{SessionID: "s1"}, true
}
func (v *cardVoice) End(context.Context, string) error  { return nil }
func (v *cardVoice) ContinuityCards() *continuity.Board { return v.board }

// raise checks a line of session s1 against canon and raises its cards.
func (v *cardVoice) raise(t *testing.T, chk *continuity.Checker, speaker, text string, at time.Time) []continuity.Card {
	t.Helper()
	var out []continuity.Card
	for _, f := range chk.Check(speaker, text) {
		c := v.board.Add(continuity.Card{Campaign: campaign, GuildID: guildID, Finding: f,
			Line: continuity.Line{SessionID: "s1", Speaker: speaker, Text: text, At: at}, Raised: time.Now()})
		v.mu.Lock()
		post := v.contradicted
		v.mu.Unlock()
		if !post(c) {
			t.Fatalf("card %s reached no DM", c.ID)
		}
		out = append(out, c)
	}
	return out
}

// dmMessage is a message the bot sent, as sent on the wire.
type dmMessage struct {
	Content string                    `json:"content"`
	Embeds  []*discordgo.MessageEmbed `json:"embeds"`
	Comps   []struct {
		Components []struct {
			Label    string `json:"label"`
			CustomID string `json:"custom_id"`
		} `json:"components"`
	} `json:"components"`
}

func (m dmMessage) text() string {
	b, _ := json.Marshal(m.Embeds)
	return m.Content + string(b)
}

// TestContinuityCards: a line that contradicts canon reaches the DM as a
// direct message (never the table's channel) with the canon fact, the
// line and Keep canon / Retcon; a player's press is refused and changes
// nothing; the DM's Retcon makes the line's claim canon through the
// conflict path, and Keep canon marks the line non-canon; a card settled
// already says so.
func TestContinuityCards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := &cardVoice{board: continuity.NewBoard()}
	h := newHarnessFor(t, bot.Deps{Voice: v}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole},
		DMUserIDs: []string{theDM.UserID}})
	if err := h.bot.Resume(ctx, guildID, bot.ClaimedSession{Campaign: campaign, VoiceChannelID: channelID,
		TextChannelID: channelID, SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	// A secret canon fact: where Vexa really is.
	if _, err := h.camp.Graph().WriteFact(ctx, memory.DM("dm"), memory.Relationship{SourceID: "vexa", TargetID: "sunken-vault",
		Type: "LOCATED_AT", Attributes: map[string]any{memory.AttrSecret: true},
		Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated}}, ""); err != nil {
		t.Fatal(err)
	}
	chk, err := continuity.New(continuity.Config{Source: continuity.CampaignSource(h.camp)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chk.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 19, 30, 0, 0, time.UTC)
	sent := func(cardID string) dmMessage {
		t.Helper()
		c := h.waitCall(func(c discordtest.Call) bool {
			return c.Method == "POST" && strings.Contains(string(c.Body), cardID) && strings.HasPrefix(c.Path, "/channels/")
		})
		if c.Path != "/channels/"+discordtest.DMChannel(theDM.UserID)+"/messages" {
			t.Fatalf("the card went to %s; want the DM's direct messages", c.Path)
		}
		var m dmMessage
		if err := c.Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}

	cards := v.raise(t, chk, "Thorin", "Grimjaw is in Duskwood.", at)
	if len(cards) != 1 {
		t.Fatalf("cards %+v; want one", cards)
	}
	place := cards[0]
	m := sent(place.ID)
	for _, want := range []string{"Grimjaw —LOCATED_AT→ Ironhold", "Grimjaw is in Duskwood.", "Thorin"} {
		if !strings.Contains(m.text(), want) {
			t.Errorf("the card does not show %q: %s", want, m.text())
		}
	}
	if len(m.Comps) != 1 || len(m.Comps[0].Components) != 2 ||
		m.Comps[0].Components[0].CustomID != "cont:k:"+guildID+":"+place.ID || m.Comps[0].Components[1].CustomID != "cont:r:"+guildID+":"+place.ID {
		t.Fatalf("the card's buttons: %+v", m.Comps)
	}

	// A player who got hold of the button (a forged interaction) is
	// refused, in a direct message or in the guild, and nothing changes.
	for _, i := range []discordtest.Interaction{h.fake.DMButton(player, "cont:r:"+guildID+":"+place.ID),
		h.fake.Button(guildID, channelID, player, "cont:r:"+guildID+":"+place.ID)} {
		if r := h.send(i); !strings.Contains(r.Data.Content, "Only the DM") || r.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
			t.Errorf("a player's Retcon: %+v", r.Data)
		}
	}
	if c, _ := v.board.Get(place.ID); c.Status != continuity.CardOpen {
		t.Fatalf("after a player's press the card is %s", c.Status)
	}
	// Forged and malformed buttons: another guild, a bad action, missing
	// parts, an unknown card.
	for _, id := range []string{"cont:r:" + otherID + ":" + place.ID, "cont:r:999:" + place.ID, "cont:x:" + guildID + ":" + place.ID,
		"cont:r:" + guildID, "cont:r:" + guildID + ":nosuchcard"} {
		r := h.send(h.fake.DMButton(theDM, id))
		if r.Data.Flags&discordgo.MessageFlagsEphemeral == 0 || strings.Contains(string(r.raw), "Settled") {
			t.Errorf("button %q: %s", id, r.raw)
		}
	}
	if c, _ := v.board.Get(place.ID); c.Status != continuity.CardOpen {
		t.Fatalf("after forged presses the card is %s", c.Status)
	}
	located := func(target string) memory.FactStatus {
		t.Helper()
		facts, err := h.camp.Graph().Relationships(ctx, "grimjaw", memory.TraversalOpts{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range facts {
			if f.Type == "LOCATED_AT" && f.TargetID == target {
				return f.Status
			}
		}
		return ""
	}
	if got := located("duskwood"); got != "" {
		t.Fatalf("a player's Retcon wrote Grimjaw in Duskwood (%s)", got)
	}

	// The DM's Retcon, from the direct message.
	r := h.send(h.fake.DMButton(theDM, "cont:r:"+guildID+":"+place.ID))
	if r.Type != discordgo.InteractionResponseDeferredMessageUpdate || !strings.Contains(r.Data.Content, "Settled") ||
		!strings.Contains(string(r.raw), "retconned") {
		t.Fatalf("the DM's Retcon: %s", r.raw)
	}
	if located("duskwood") != memory.StatusActive || located("ironhold") == memory.StatusActive {
		t.Errorf("after Retcon: Grimjaw in Duskwood %q, in Ironhold %q; want Duskwood canon, Ironhold no longer",
			located("duskwood"), located("ironhold"))
	}
	if r := h.send(h.fake.DMButton(theDM, "cont:k:"+guildID+":"+place.ID)); !strings.Contains(r.Data.Content, "settled already") {
		t.Errorf("Keep canon on a settled card: %s", r.raw)
	}

	// Keep canon: the line is marked non-canon.
	if err := h.camp.Sessions().StartSession(ctx, "s-cont", at.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	line := memory.TranscriptEntry{SessionID: "s-cont", SpeakerID: player.UserID, SpeakerName: "Thorin",
		Text: "Thorin has the Dawn Hammer.", At: at, IdempotencyKey: "s-cont-1"}
	if _, err := h.camp.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{line}); err != nil {
		t.Fatal(err)
	}
	f := chk.Check(line.SpeakerName, line.Text)
	if len(f) != 1 || f[0].Kind != continuity.KindHolder {
		t.Fatalf("findings %+v; want a holder card", f)
	}
	hold := v.board.Add(continuity.Card{Campaign: campaign, GuildID: guildID, Finding: f[0],
		Line: continuity.Line{SessionID: "s-cont", Speaker: "Thorin", Text: line.Text, At: at}})
	r = h.send(h.fake.DMButton(theDM, "cont:k:"+guildID+":"+hold.ID))
	if !strings.Contains(string(r.raw), "kept") {
		t.Fatalf("the DM's Keep canon: %s", r.raw)
	}
	var noncanon bool
	if err := h.pool.QueryRow(ctx, `SELECT noncanon FROM transcript_entries WHERE idempotency_key = 's-cont-1'`).Scan(&noncanon); err != nil || !noncanon {
		t.Errorf("after Keep canon the line is noncanon=%v (%v)", noncanon, err)
	}

	// A card against a secret fact goes to the DM only: nothing of it
	// reaches the table's channel.
	secret := v.raise(t, chk, "Thorin", "Vexa is in Duskwood.", at)
	if len(secret) != 1 || !secret[0].Canon.Secret {
		t.Fatalf("cards %+v; want one against a secret fact", secret)
	}
	if m := sent(secret[0].ID); !strings.Contains(m.text(), "secret") {
		t.Errorf("the DM's card does not mark the fact secret: %s", m.text())
	}
	for _, c := range h.fake.Calls() {
		if strings.Contains(c.Path, channelID) && (strings.Contains(string(c.Body), "Sunken Vault") || strings.Contains(string(c.Body), "Duskwood")) {
			t.Errorf("the table's channel got a card: %s %s", c.Path, c.Body)
		}
	}

	// A restart: the card is in the store, the process that raised it is
	// gone (its board with it); the button still settles it, once. (Its
	// line is in the session log: Keep canon of a line not stored yet
	// leaves the card open.)
	if _, err := h.camp.Sessions().Session(ctx, "s1"); err != nil {
		if err := h.camp.Sessions().StartSession(ctx, "s1", at.Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.camp.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{{SessionID: "s1", SpeakerName: "Thorin",
		Text: "Vexa is in Duskwood.", At: at, IdempotencyKey: "s1-vexa"}}); err != nil {
		t.Fatal(err)
	}
	if err := v.board.Save(ctx, h.camp); err != nil {
		t.Fatal(err)
	}
	v.board = continuity.NewBoard()
	if r := h.send(h.fake.DMButton(theDM, "cont:k:"+guildID+":"+secret[0].ID)); !strings.Contains(string(r.raw), "kept") ||
		!strings.Contains(r.Data.Content, "Settled") {
		t.Fatalf("Keep canon after a restart: %s", r.raw)
	}
	if r := h.send(h.fake.DMButton(theDM, "cont:r:"+guildID+":"+secret[0].ID)); !strings.Contains(r.Data.Content, "settled already") {
		t.Errorf("Retcon of a card kept after a restart: %s", r.raw)
	}
}
