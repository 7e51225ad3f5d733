package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

const (
	sampleCampaignFile = "../../testdata/campaigns/ironhold-saga.yaml"
	demoScene          = "../../testdata/scenes/rusty-tankard.yaml"
)

// TestDemoSpoken plays the demo's scene for real: synthesised speech,
// Opus, the lanes and the offline speech-to-text engine.
func TestDemoSpoken(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	audiotest.Need(t, "pocketsphinx_continuous")
	vars := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
	code, out, errs := runCLI(t, vars, "demo", "--state-dir", t.TempDir(), "--file", sampleCampaignFile, "--scene", demoScene, "--out", t.TempDir())
	if code != 0 {
		t.Fatalf("demo exited %d: %s\n%s", code, errs, out)
	}
	for _, want := range []string{
		"as the fresh demo campaign ironhold-saga-demo-1",
		// The main moment: a name misheard and restored, the NPC
		// addressed answering in voice from what it knows.
		`heard  "bran knock, where can we find grim jaw?"`,
		`fixed  "Brannoc, where can we find Grimjaw?"`,
		"Grimjaw is at Ironhold.",
		"01-brannoc.wav",
		`Thorin said   "Brannoc, what do you know about the Ashen Circle?"`,
		"heard  ",
		"the session ended after",
		// The hot context: its sheet, then its notes, sent apart.
		"  | You are Brannoc, a character",
		"  | Your notes: what you know right now.",
		"  | - Brannoc LOCATED_AT The Rusty Tankard",
		`asking the campaign's memory`,
		"[chunk s3-demo",
		"facts waiting for the DM's review",
		"Vexa Thorn -MEMBER_OF-> Ashen Circle",
		"recap of the scene",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
	// Again: the scene plays in a fresh campaign of its own, so the first
	// run's replies are not the second's memory; both runs answer alike.
	// The second run plays the scene as the first one heard it (its heard
	// texts given): what it checks is the fresh campaign, not
	// speech-to-text, which the first run did (and which is most of a
	// spoken run's time).
	code, out2, errs := runCLI(t, vars, "demo", "--state-dir", t.TempDir(), "--file", sampleCampaignFile, "--scene", asHeard(t, demoScene, out),
		"--out", t.TempDir())
	if code != 0 {
		t.Fatalf("second demo exited %d: %s", code, errs)
	}
	for _, want := range []string{"as the fresh demo campaign ironhold-saga-demo-2", "[chunk s3-demo", "memory now holds 3 sessions"} {
		if !strings.Contains(out2, want) {
			t.Errorf("the second run's output lacks %q:\n%s", want, out2)
		}
	}
	first := func(out string) string {
		_, after, _ := strings.Cut(out, `fixed  "Brannoc, where can we find Grimjaw?"`)
		reply, _, _ := strings.Cut(after, "\n            (spoken")
		return reply
	}
	if a, b := first(out), first(out2); a == "" || a != b {
		t.Errorf("the two runs answer the first line differently:\n%s\n%s", a, b)
	}
}

// asHeard writes the scene at path with each line's heard text set to
// what a demo run, whose output is out, heard, and returns the new file.
func asHeard(t *testing.T, path, out string) string {
	t.Helper()
	var heard []string
	for _, m := range regexp.MustCompile(`said   (".*")\n +heard  (".*")\n`).FindAllStringSubmatch(out, -1) {
		said, err1 := strconv.Unquote(m[1])
		h, err2 := strconv.Unquote(m[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("said %s, heard %s: %v %v", m[1], m[2], err1, err2)
		}
		if said != "" { // not a late answer to a line reported before
			heard = append(heard, h)
		}
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	given := regexp.MustCompile(`, heard: "[^"]*"`)
	say := regexp.MustCompile(`say: "[^"]*"`)
	lines := strings.Split(string(text), "\n")
	k := 0
	for i, l := range lines {
		if !strings.HasPrefix(l, "  - {speaker:") {
			continue
		}
		if k == len(heard) {
			t.Fatalf("the run heard %d lines, the scene has more:\n%s", len(heard), out)
		}
		h, _ := json.Marshal(heard[k])
		l = given.ReplaceAllString(l, "")
		loc := say.FindStringIndex(l)
		if loc == nil {
			t.Fatalf("scene line %q says nothing", l)
		}
		lines[i] = l[:loc[1]] + ", heard: " + string(h) + l[loc[1]:]
		k++
	}
	if k != len(heard) {
		t.Fatalf("the run heard %d lines, the scene has %d", len(heard), k)
	}
	heardPath := filepath.Join(t.TempDir(), "heard.yaml")
	if err := os.WriteFile(heardPath, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return heardPath
}

// TestDemoJSON plays a short scene offline (heard text given) and reads the
// documented --json objects. The long scene (45 minutes of table talk, a
// fact of minute 3 asked for at minute 40) plays through the same
// scene.Play in table/scene's TestLongNight; here the scene is as long as
// the --json contract needs: a command, lines before and after it, a fact
// the last question asks for.
func TestDemoJSON(t *testing.T) {
	t.Parallel()
	sceneFile := filepath.Join(t.TempDir(), "scene.yaml")
	if err := os.WriteFile(sceneFile, []byte(`session: json-night
start: 2026-03-22T19:00:00Z
players:
  - {name: Thorin, id: "311111111111111111"}
  - {name: Lyra, id: "322222222222222222"}
lines:
  - {command: "/npc scene brannoc grimjaw", by: DM}
  - {speaker: Thorin, say: "Good evening Brannoc, we are back from the marshes.", heard: "good evening brannoc, we are back from the marshes."}
  - {speaker: Lyra, say: "Listen, the vault key is hidden under the third stone of the old mill.", heard: "listen, the vault key is hidden under the third stone of the old mill.", after: 20s}
  - {speaker: Thorin, say: "Grimjaw, my sword needs a new edge.", heard: "grimjaw, my sword needs a new edge.", after: 25s}
  - {speaker: Lyra, say: "We should keep watch in pairs tonight.", heard: "we should keep watch in pairs tonight.", after: 25s}
  - {speaker: Thorin, say: "Brannoc, where did Lyra say the vault key is hidden?", heard: "brannoc, where did lyra say the vault key is hidden?", after: 15s}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	const sceneLines, sceneCommands = 5, 1
	vars := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
	code, out, errs := runCLI(t, vars, "demo", "--state-dir", t.TempDir(), "--file", sampleCampaignFile, "--scene", sceneFile, "--json", "--out", t.TempDir())
	if code != 0 {
		t.Fatalf("demo exited %d: %s\n%s", code, errs, out)
	}
	keys := []string{"at", "speaker", "said", "heard", "corrected", "addressee", "reason", "context", "tools", "reply"}
	var lines []map[string]any
	commands := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("a --json line is not JSON: %v\n%s", err, sc.Text())
		}
		if _, ok := m["command"]; ok {
			commands++
			continue
		}
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				t.Fatalf("a line object lacks %q: %s", k, sc.Text())
			}
		}
		lines = append(lines, m)
	}
	if len(lines) != sceneLines || commands != sceneCommands {
		t.Fatalf("%d line objects and %d command objects, want one per line (%d) and command (%d) of the scene:\n%s",
			len(lines), commands, sceneLines, sceneCommands, out)
	}
	last := lines[len(lines)-1]
	ctx, _ := json.Marshal(last["context"])
	if last["addressee"] != "brannoc" || !strings.Contains(strings.ToLower(string(ctx)), "third stone of the old mill") {
		t.Errorf("the last question: addressee %v, context %s", last["addressee"], ctx)
	}
	// Without an LLM the addressed NPC answers from memory.
	if r, _ := last["reply"].(string); r == "" || last["fallback"] != true {
		t.Errorf("the last question was not answered from memory: %v", last)
	}
}

// TestDemoWithAnLLM gives the NPC a (fake) LLM: it answers in voice.
func TestDemoWithAnLLM(t *testing.T) {
	t.Parallel()
	llm := llmtest.New(func(_ int, req llmtest.Request) llmtest.Reply {
		if strings.Contains(req.Messages[0].Content, "extract a knowledge graph") {
			return llmtest.Reply{Text: `{"entities":[{"name":"Brannoc","type":"npc"},{"name":"Ashen Circle","type":"faction"}],
"relationships":[{"source":"Brannoc","target":"Ashen Circle","type":"FEARS","confidence":0.6,"basis":"inferred"}]}`}
		}
		return llmtest.Reply{Text: "Keep your voice down. The Circle has ears in this tavern."}
	})
	defer llm.Close()
	scene := filepath.Join(t.TempDir(), "scene.yaml")
	if err := os.WriteFile(scene, []byte(`session: with-llm
lines:
  - {speaker: Thorin, say: "Brannoc, what do you know about the Ashen Circle?", heard: "brannoc, what do you know about the ashen circle?"}
  - {speaker: Lyra, say: "They took the steel to the Tower of Whispers.", heard: "they took the steel to the tower of whispers.", after: 2s}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"GLYPHOXA_DSN": migratedDB(t), "GLYPHOXA_LLM_BASE_URL": llm.URL(), "GLYPHOXA_LLM_MODEL": "fake"}
	dir := t.TempDir()
	code, out, errs := runCLI(t, vars, "demo", "--state-dir", t.TempDir(), "--file", sampleCampaignFile, "--scene", scene, "--out", dir)
	if code != 0 {
		t.Fatalf("demo exited %d: %s\n%s", code, errs, out)
	}
	for _, want := range []string{
		`brannoc answers (addressed by name): "Keep your voice down. The Circle has ears in this tavern."`,
		"waiting for the DM",
		"Brannoc -FEARS-> Ashen Circle",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "01-brannoc.wav"))
	if err != nil {
		t.Fatalf("the NPC's reply was not spoken: %v", err)
	}
	pcm, err := audio.DecodeWAV(b)
	if err != nil || pcm.Duration() < 2 || pcm.RMS() < -40 {
		t.Errorf("the reply's WAV: %.1f s at %.0f dBFS, %v", pcm.Duration(), pcm.RMS(), err)
	}
}
