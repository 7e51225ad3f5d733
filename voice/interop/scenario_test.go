package interop_test

import (
	"context"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/dave"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/rtp"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// TestDiscordJS runs discord.js and glyphoxa in one DAVE channel through
// every scenario, in both transport modes, with discord.js winning and
// losing the first commit race.
func TestDiscordJS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, mode, favour string
	}{
		{"aead_aes256_gcm_rtpsize, discord.js wins the commit race", rtp.ModeAES256GCM, djsID},
		{"aead_aes256_gcm_rtpsize, glyphoxa wins the commit race", rtp.ModeAES256GCM, botID},
		{"aead_xchacha20_poly1305_rtpsize, discord.js wins the commit race", rtp.ModeXChaCha20, djsID},
		{"aead_xchacha20_poly1305_rtpsize, glyphoxa wins the commit race", rtp.ModeXChaCha20, botID},
	} {
		// Each scenario has its own fake voice server and discord.js
		// process; they mostly wait on real-time streams.
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			scenario(t, tc.mode, tc.favour)
		})
	}
}

func scenario(t *testing.T, mode, favour string) {
	c := newCall(t, mode, favour)
	bot := c.dial(botID)
	joined := c.joinDJS()
	if joined.Mode != mode || joined.DAVEVersion != dave.ProtocolVersion {
		t.Fatalf("discord.js connected with mode %q, DAVE v%d; want %s, v%d", joined.Mode, joined.DAVEVersion, mode, dave.ProtocolVersion)
	}

	// The first group: the favoured client's commit wins, the other joins
	// by welcome.
	code := c.settle("", bot)
	if w := c.race.firstWinner(); w != favour {
		t.Fatalf("the first commit was %q's, want %q's", w, favour)
	}
	t.Logf("group formed at epoch %d by %s's commit; privacy code %s", c.gw.Epoch(), favour, code)
	c.glyphoxaToDJS("epoch 1, glyphoxa → discord.js", bot, botID, opusFrames(t, 50, 1))
	c.djsToGlyphoxa("epoch 1, discord.js → glyphoxa", opusFrames(t, 50, 2), bot)

	// A third member joins (both members commit; one wins) and leaves.
	third := c.dial(thirdID)
	code3 := c.settle(code, bot, third)
	if len(c.gw.Members()) != 3 {
		t.Fatalf("members %v", c.gw.Members())
	}
	c.djsToGlyphoxa("three members, discord.js → both glyphoxa clients", opusFrames(t, 40, 3), bot, third)
	c.glyphoxaToDJS("three members, the third → discord.js", third, thirdID, opusFrames(t, 40, 4))
	third.Close()
	code = c.settle(code3, bot)
	if len(c.gw.Members()) != 2 {
		t.Fatalf("after the third left, members %v", c.gw.Members())
	}
	c.glyphoxaToDJS("after the third left, glyphoxa → discord.js", bot, botID, opusFrames(t, 40, 5))

	// A dropped socket, then a 4015 close: discord.js resumes, the group
	// stays.
	for _, fault := range []struct {
		name string
		do   func()
	}{
		{"dropped socket", func() { c.srv.DropWS(djsID) }},
		{"4015", func() { c.srv.CloseWS(djsID, gateway.CloseServerCrashed) }},
	} {
		resumes := c.srv.Resumes()
		fault.do()
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		if err := voicetest.Wait(ctx, func() bool { return c.srv.Resumes() > resumes }); err != nil {
			cancel()
			t.Fatalf("after a %s discord.js did not resume: %+v", fault.name, c.djs.call("state", nil))
		}
		cancel()
		s := c.djs.call("waitNetworking", map[string]any{"code": 4})
		if s.PrivacyCode != code || !s.Ready {
			t.Fatalf("after a %s and resume discord.js shows %+v, want privacy code %s", fault.name, s, code)
		}
		c.djsToGlyphoxa("after a "+fault.name+" and resume, discord.js → glyphoxa", opusFrames(t, 30, 6), bot)
		c.glyphoxaToDJS("after a "+fault.name+" and resume, glyphoxa → discord.js", bot, botID, opusFrames(t, 30, 7))
	}

	// discord.js leaves: glyphoxa is alone and is reset; discord.js
	// rejoins and a new group forms.
	resets := c.gw.Stats().Resets
	c.djs.call("leave", nil)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := voicetest.Wait(ctx, func() bool {
		return c.gw.Stats().Resets > resets && bot.E2EE().(*dave.Session).Epoch() == 0
	}); err != nil {
		t.Fatalf("glyphoxa, left alone, was not reset: gateway %+v, members %v", c.gw.Stats(), c.gw.Members())
	}
	c.joinDJS()
	code = c.settle(code, bot)
	t.Logf("after leaving and rejoining: a new group at epoch %d, privacy code %s", c.gw.Epoch(), code)
	c.glyphoxaToDJS("after the rejoin, glyphoxa → discord.js", bot, botID, opusFrames(t, 40, 8))
	c.djsToGlyphoxa("after the rejoin, discord.js → glyphoxa", opusFrames(t, 40, 9), bot)

	// discord.js's UDP keepalives reached the server and were tolerated.
	if k := c.srv.Keepalives(djsID) + c.srv.StrayKeepalives(); k == 0 {
		t.Fatal("the server saw no keepalive from discord.js")
	}
	t.Logf("keepalives: discord.js %d (+%d before protocol selection), glyphoxa %d; glyphoxa stats %+v; packets the relay sealed again lest discord.js misread them (issue 29): %d of %d",
		c.srv.Keepalives(djsID), c.srv.StrayKeepalives(), c.srv.Keepalives(botID), bot.Stats(), c.srv.Resealed(), c.srv.Relayed())
}
