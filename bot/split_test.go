package bot

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

func TestSplitMessage(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("é", 90) + "\n" // multi-byte on purpose
	long := strings.Repeat(line, 60)       // 5,460 characters
	parts := splitMessage(long, maxContent)
	if len(parts) != 3 {
		t.Fatalf("%d parts", len(parts))
	}
	total := 0
	for _, p := range parts {
		if n := utf8.RuneCountInString(p); n > maxContent {
			t.Fatalf("part of %d characters", n)
		}
		if !utf8.ValidString(p) || strings.HasPrefix(p, "\n") {
			t.Fatalf("bad cut: %q", p[:10])
		}
		total += strings.Count(p, "é")
	}
	if total != 90*60 {
		t.Fatalf("lost characters: %d", total)
	}
	one := strings.Repeat("x", 4500) // no spaces at all
	ps := splitMessage(one, maxContent)
	if len(ps) != 3 || len(ps[0]) != 2000 || len(ps[2]) != 500 {
		t.Fatalf("hard cut: %d parts", len(ps))
	}
	if splitMessage("  ", 10) != nil {
		t.Fatal("blank text made a message")
	}
}

func TestPackEmbeds(t *testing.T) {
	t.Parallel()
	var es []*discordgo.MessageEmbed
	for range 14 {
		e := &discordgo.MessageEmbed{Title: strings.Repeat("t", 300), Description: strings.Repeat("d", 1500)}
		for range 30 {
			e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "n", Value: strings.Repeat("v", 2000)})
		}
		es = append(es, e)
	}
	msgs := packEmbeds(es)
	count := 0
	for _, m := range msgs {
		if len(m) > maxEmbedsPerMsg {
			t.Fatalf("%d embeds in a message", len(m))
		}
		size := 0
		for _, e := range m {
			size += embedSize(e)
			if utf8.RuneCountInString(e.Title) > maxEmbedTitle || len(e.Fields) > maxFields {
				t.Fatal("embed parts not clipped")
			}
			for _, f := range e.Fields {
				if utf8.RuneCountInString(f.Value) > maxFieldValue {
					t.Fatal("field not clipped")
				}
			}
		}
		if size > maxEmbedTotal {
			t.Fatalf("message of %d embed characters", size)
		}
		count += len(m)
	}
	if count != 14 {
		t.Fatalf("lost embeds: %d", count)
	}
}
