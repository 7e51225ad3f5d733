package bot

import (
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// Discord's message and embed limits.
const (
	maxContent        = 2000
	maxEmbedTotal     = 6000
	maxEmbedDesc      = 4096
	maxEmbedTitle     = 256
	maxFieldName      = 256
	maxFieldValue     = 1024
	maxFields         = 25
	maxEmbedsPerMsg   = 10
	maxChoices        = 25
	maxChoiceName     = 100
	maxComponentsRows = 5
)

// splitMessage cuts text into messages of at most limit characters, at line
// breaks where possible, then at spaces, never inside a character.
func splitMessage(text string, limit int) []string {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	var parts []string
	for utf8.RuneCountInString(text) > limit {
		cut := cutPoint(text, limit)
		parts = append(parts, strings.TrimRight(text[:cut], " \n"))
		text = strings.TrimLeft(text[cut:], " \n")
	}
	if text != "" {
		parts = append(parts, text)
	}
	return parts
}

// cutPoint returns a byte index at most limit runes into s: the last line
// break, else the last space, else the limit itself.
func cutPoint(s string, limit int) int {
	end, n := len(s), 0
	for i := range s {
		if n == limit {
			end = i
			break
		}
		n++
	}
	if i := strings.LastIndex(s[:end], "\n"); i > end/2 {
		return i + 1
	}
	if i := strings.LastIndex(s[:end], " "); i > end/2 {
		return i + 1
	}
	return end
}

// truncate shortens s to at most n characters, marking the cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// embedSize is what Discord counts against the 6,000-character limit.
func embedSize(e *discordgo.MessageEmbed) int {
	n := utf8.RuneCountInString(e.Title) + utf8.RuneCountInString(e.Description)
	for _, f := range e.Fields {
		n += utf8.RuneCountInString(f.Name) + utf8.RuneCountInString(f.Value)
	}
	if e.Footer != nil {
		n += utf8.RuneCountInString(e.Footer.Text)
	}
	if e.Author != nil {
		n += utf8.RuneCountInString(e.Author.Name)
	}
	return n
}

// packEmbeds groups embeds into messages that respect Discord's limits
// (at most ten embeds and 6,000 characters per message), after clipping
// each embed's parts to their own limits.
func packEmbeds(es []*discordgo.MessageEmbed) [][]*discordgo.MessageEmbed {
	var out [][]*discordgo.MessageEmbed
	var cur []*discordgo.MessageEmbed
	size := 0
	for _, e := range es {
		clipEmbed(e)
		n := embedSize(e)
		if len(cur) > 0 && (len(cur) == maxEmbedsPerMsg || size+n > maxEmbedTotal) {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, e)
		size += n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// clipEmbed enforces the per-part limits of one embed.
func clipEmbed(e *discordgo.MessageEmbed) {
	e.Title = truncate(e.Title, maxEmbedTitle)
	e.Description = truncate(e.Description, maxEmbedDesc)
	if len(e.Fields) > maxFields {
		e.Fields = e.Fields[:maxFields]
	}
	for _, f := range e.Fields {
		f.Name = truncate(f.Name, maxFieldName)
		f.Value = truncate(f.Value, maxFieldValue)
		if f.Value == "" {
			f.Value = "—"
		}
	}
	// A single embed over the total limit loses fields from the end.
	for embedSize(e) > maxEmbedTotal && len(e.Fields) > 0 {
		e.Fields = e.Fields[:len(e.Fields)-1]
	}
	if embedSize(e) > maxEmbedTotal {
		e.Description = truncate(e.Description, max(1, maxEmbedDesc-(embedSize(e)-maxEmbedTotal)))
	}
}
