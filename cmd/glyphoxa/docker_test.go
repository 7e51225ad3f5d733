package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
)

// composeFile is the part of docker-compose.yml the checks read.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	User        string            `yaml:"user"`
	Profiles    []string          `yaml:"profiles"`
	Command     []string          `yaml:"command"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []yaml.Node       `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	StdinOpen bool `yaml:"stdin_open"`
	TTY       bool `yaml:"tty"`
}

// mount is one volume entry, short ("src:dst:ro") or long syntax.
type mount struct {
	Type, Source, Target string
	ReadOnly             bool
	CreateHostPath       *bool
}

func (s composeService) mounts(t *testing.T) []mount {
	t.Helper()
	var out []mount
	for _, n := range s.Volumes {
		if n.Kind == yaml.ScalarNode {
			parts := strings.Split(n.Value, ":")
			m := mount{Type: "volume", Source: parts[0], Target: parts[1]}
			if strings.HasPrefix(m.Source, ".") || strings.HasPrefix(m.Source, "/") {
				m.Type = "bind"
			}
			m.ReadOnly = len(parts) > 2 && parts[2] == "ro"
			out = append(out, m)
			continue
		}
		var long struct {
			Type     string `yaml:"type"`
			Source   string `yaml:"source"`
			Target   string `yaml:"target"`
			ReadOnly bool   `yaml:"read_only"`
			Bind     struct {
				CreateHostPath *bool `yaml:"create_host_path"`
			} `yaml:"bind"`
		}
		if err := n.Decode(&long); err != nil {
			t.Fatalf("volume at line %d: %v", n.Line, err)
		}
		out = append(out, mount{long.Type, long.Source, long.Target, long.ReadOnly, long.Bind.CreateHostPath})
	}
	return out
}

// dockerInstr is one Dockerfile instruction of a build stage.
type dockerInstr struct {
	stage     int
	op, args  string
	firstLine int
}

// parseDockerfile splits a Dockerfile into instructions, joining
// continuation lines and dropping comments.
func parseDockerfile(t *testing.T, path string) []dockerInstr {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []dockerInstr
	stage, line, start := -1, 0, 0
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (text == "" || strings.HasPrefix(text, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = line
		}
		if strings.HasPrefix(text, "#") {
			continue
		}
		if strings.HasSuffix(text, "\\") {
			cur.WriteString(strings.TrimSuffix(text, "\\") + " ")
			continue
		}
		cur.WriteString(text)
		op, args, _ := strings.Cut(cur.String(), " ")
		op = strings.ToUpper(op)
		if op == "FROM" {
			stage++
		}
		out = append(out, dockerInstr{stage, op, strings.Join(strings.Fields(args), " "), start})
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDockerFiles(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	bot, db, init, pull := c.Services["glyphoxa"], c.Services["db"], c.Services["init"], c.Services["ollama-pull"]

	t.Run("the database publishes no port", func(t *testing.T) {
		if len(db.Ports) > 0 {
			t.Errorf("db publishes %v; a local PostgreSQL would clash", db.Ports)
		}
	})
	t.Run("the bot checks its health with glyphoxa itself", func(t *testing.T) {
		if bot.Healthcheck == nil || len(bot.Healthcheck.Test) < 3 || bot.Healthcheck.Test[0] != "CMD" ||
			bot.Healthcheck.Test[1] != "glyphoxa" || bot.Healthcheck.Test[2] != "health" {
			t.Fatalf("healthcheck %+v, want [CMD glyphoxa health …]", bot.Healthcheck)
		}
		listen := bot.Command[slices.Index(bot.Command, "--listen")+1]
		_, port, _ := strings.Cut(listen, ":")
		if !slices.ContainsFunc(bot.Healthcheck.Test, func(a string) bool { return strings.Contains(a, "127.0.0.1:"+port+"/readyz") }) {
			t.Errorf("healthcheck %v does not check readiness (/readyz) on the port serve listens on (%s)", bot.Healthcheck.Test, listen)
		}
	})
	t.Run("the console listens on every interface and its port is published", func(t *testing.T) {
		i := slices.Index(bot.Command, "--console-listen")
		if i < 0 || i+1 >= len(bot.Command) {
			t.Fatalf("serve %v has no --console-listen: the console would listen on the container's loopback", bot.Command)
		}
		host, port, _ := strings.Cut(bot.Command[i+1], ":")
		if host != "0.0.0.0" {
			t.Errorf("the console listens on %q, want 0.0.0.0 inside the container", bot.Command[i+1])
		}
		if !slices.ContainsFunc(bot.Ports, func(p string) bool { return strings.HasSuffix(p, ":"+port+":"+port) }) {
			t.Errorf("ports %v do not publish the console's port %s", bot.Ports, port)
		}
	})
	t.Run("every secret passes through the environment", func(t *testing.T) {
		for _, o := range config.Overrides() {
			if _, ok := bot.Environment[o.Env]; !ok {
				t.Errorf("the glyphoxa service does not pass %s (%s)", o.Env, o.Key)
			}
		}
		if _, ok := bot.Environment["DISCORD_TOKEN"]; !ok {
			t.Error("the glyphoxa service does not pass DISCORD_TOKEN (init writes token: ${DISCORD_TOKEN})")
		}
	})
	t.Run("init checks the configuration in the bot's environment", func(t *testing.T) {
		// init ends with config check: without the variables of .env the
		// bot gets (GLYPHOXA_LLM_*, the keys), it would show "LLM: none"
		// for a configuration whose LLM is in .env, and refuse providers
		// whose key is there.
		for _, k := range append([]string{"DISCORD_TOKEN"}, overrideEnvs()...) {
			if got, want := init.Environment[k], bot.Environment[k]; got != want {
				t.Errorf("init's %s is %q, the bot's %q: init's config check does not see what the bot will use", k, got, want)
			}
		}
	})
	t.Run("the bot reads the config.yaml init writes", func(t *testing.T) {
		// init writes it 0600 as its user: the bot must run as the same.
		if bot.User == "" || bot.User != init.User {
			t.Errorf("the bot runs as %q, init as %q: the bot cannot read the 0600 file init writes", bot.User, init.User)
		}
		owner := c.Services["spool-owner"]
		if bot.DependsOn["spool-owner"].Condition != "service_completed_successfully" ||
			len(owner.Entrypoint) < 3 || owner.Entrypoint[0] != "chown" || owner.Entrypoint[1] != bot.User {
			t.Errorf("spool-owner %v (bot depends on it: %+v): want the spool volume chowned to the bot's user %q first",
				owner.Entrypoint, bot.DependsOn["spool-owner"], bot.User)
		}
		spool := slices.IndexFunc(bot.mounts(t), func(m mount) bool { return m.Source == "spool" })
		if spool < 0 || !slices.ContainsFunc(owner.mounts(t), func(m mount) bool {
			return m.Source == "spool" && m.Target == bot.mounts(t)[spool].Target && m.Target == owner.Entrypoint[2]
		}) {
			t.Errorf("spool-owner does not chown the bot's spool volume: %+v", owner.mounts(t))
		}
	})
	t.Run(".dockerignore keeps secrets and local state out of the build", func(t *testing.T) {
		b, err := os.ReadFile("../../.dockerignore")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Fields(string(b))
		for _, want := range []string{".env", "config.yaml", "campaigns/", "spool/", ".cache", ".git"} {
			if !slices.Contains(lines, want) {
				t.Errorf(".dockerignore does not exclude %s", want)
			}
		}
	})
	t.Run("config.yaml is a file that must exist", func(t *testing.T) {
		ms := bot.mounts(t)
		i := slices.IndexFunc(ms, func(m mount) bool { return strings.HasSuffix(m.Source, "config.yaml") })
		if i < 0 {
			t.Fatalf("no config.yaml mount in %+v", ms)
		}
		m := ms[i]
		if m.Type != "bind" || m.CreateHostPath == nil || *m.CreateHostPath || !m.ReadOnly {
			t.Errorf("config mount %+v: want a read-only bind with bind.create_host_path: false (else a missing file becomes a directory)", m)
		}
		if bot.Environment["GLYPHOXA_CONFIG"] != m.Target {
			t.Errorf("GLYPHOXA_CONFIG %q, want the mounted %q so that every subcommand reads it", bot.Environment["GLYPHOXA_CONFIG"], m.Target)
		}
	})
	t.Run("a campaigns directory is mounted", func(t *testing.T) {
		ms := bot.mounts(t)
		if !slices.ContainsFunc(ms, func(m mount) bool { return m.Source == "./campaigns" && m.Target == "/campaigns" }) {
			t.Errorf("no ./campaigns:/campaigns mount in %+v", ms)
		}
		if fi, err := os.Stat("../../campaigns"); err != nil || !fi.IsDir() {
			t.Errorf("the repository has no campaigns/ directory: %v", err)
		}
	})
	t.Run("init runs in a container without config.yaml", func(t *testing.T) {
		if !slices.Contains(init.Profiles, "setup") || len(init.Entrypoint) < 2 || init.Entrypoint[0] != "glyphoxa" || init.Entrypoint[1] != "init" {
			t.Fatalf("init service %+v: want profile setup and entrypoint glyphoxa init", init)
		}
		ms := init.mounts(t)
		if slices.ContainsFunc(ms, func(m mount) bool { return strings.HasSuffix(m.Source, "config.yaml") }) {
			t.Errorf("init mounts config.yaml, which it is to create: %+v", ms)
		}
		out := init.Entrypoint[slices.Index(init.Entrypoint, "--config")+1]
		if !slices.ContainsFunc(ms, func(m mount) bool { return m.Source == "./" && strings.HasPrefix(out, m.Target+"/") && !m.ReadOnly }) {
			t.Errorf("init writes %s, which is not in a writable mount of the project directory: %+v", out, ms)
		}
		if !init.StdinOpen || !init.TTY {
			t.Error("init is interactive: it needs stdin_open and tty")
		}
	})
	t.Run("the ollama profile pulls its model", func(t *testing.T) {
		if !slices.Contains(pull.Profiles, "ollama") || pull.DependsOn["ollama"].Condition != "service_healthy" {
			t.Fatalf("ollama-pull %+v: want profile ollama, after ollama is healthy", pull)
		}
		// It pulls the model the bot asks for: the same variable, with the
		// same default.
		script := strings.Join(pull.Entrypoint, " ")
		if !strings.Contains(script, `ollama pull "$$GLYPHOXA_LLM_MODEL"`) {
			t.Errorf("ollama-pull runs %v, want ollama pull \"$$GLYPHOXA_LLM_MODEL\"", pull.Entrypoint)
		}
		if got, want := pull.Environment["GLYPHOXA_LLM_MODEL"], bot.Environment["GLYPHOXA_LLM_MODEL"]; got != want {
			t.Errorf("ollama-pull's GLYPHOXA_LLM_MODEL is %q, the bot's %q: Ollama would pull another model than the one asked for", got, want)
		}
		if c.Services["ollama"].Healthcheck == nil {
			t.Error("ollama has no healthcheck to wait for")
		}
	})

	instrs := parseDockerfile(t, "../../Dockerfile")
	last := instrs[len(instrs)-1].stage
	final := func(op string) []string {
		var out []string
		for _, in := range instrs {
			if in.stage == last && in.op == op {
				out = append(out, in.args)
			}
		}
		return out
	}
	t.Run("the image checks itself and has the voices", func(t *testing.T) {
		hc := final("HEALTHCHECK")
		if len(hc) != 1 || !regexp.MustCompile(`CMD \["glyphoxa", "health"`).MatchString(hc[0]) {
			t.Errorf("HEALTHCHECK %q, want CMD [\"glyphoxa\", \"health\"…]", hc)
		}
		if ep := final("ENTRYPOINT"); len(ep) != 1 || !strings.Contains(ep[0], "glyphoxa") {
			t.Errorf("ENTRYPOINT %q", ep)
		}
		run := strings.Join(final("RUN"), " ")
		for _, p := range []string{"festival", "festvox-us-slt-hts", "flite", "espeak-ng", "pocketsphinx-en-us"} {
			if !slices.Contains(strings.Fields(run), p) {
				t.Errorf("the image does not install %s", p)
			}
		}
		var build []string
		for _, in := range instrs {
			if in.stage < last && in.op == "RUN" && strings.Contains(in.args, "go build") {
				build = append(build, in.args)
			}
		}
		if len(build) != 1 || !strings.Contains(build[0], "-Wno-stringop-overread") {
			t.Errorf("the image's go build %q does not silence gopus's warnings", build)
		}
	})
	t.Run("README documents importing in the container", func(t *testing.T) {
		readme, err := os.ReadFile("../../README.md")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"docker compose run --rm glyphoxa import /campaigns/", "docker compose run --rm --user"} {
			if !strings.Contains(string(readme), want) {
				t.Errorf("README.md lacks %q", want)
			}
		}
	})
	t.Run("README's Docker steps come in the order they work in", func(t *testing.T) {
		readme, err := os.ReadFile("../../README.md")
		if err != nil {
			t.Fatal(err)
		}
		_, section, _ := strings.Cut(string(readme), "## Self-hosting with Docker\n")
		_, block, _ := strings.Cut(section, "```sh\n")
		block, _, _ = strings.Cut(block, "```")
		lines := strings.Split(block, "\n")
		step := func(what string, is func(string) bool) int {
			i := slices.IndexFunc(lines, is)
			if i < 0 {
				t.Fatalf("the Docker steps have no line that %s:\n%s", what, block)
			}
			return i
		}
		// init reads the token and the user from .env, and imports the
		// campaign file from ./campaigns (binding the server to its
		// campaign); the bot starts on the config.yaml init wrote.
		env := step("writes DISCORD_TOKEN to .env", func(l string) bool { return strings.Contains(l, "DISCORD_TOKEN=") && strings.Contains(l, ".env") })
		uid := step("writes GLYPHOXA_UID to .env", func(l string) bool { return strings.Contains(l, "GLYPHOXA_UID") && strings.Contains(l, ".env") })
		file := step("puts a campaign file in campaigns/", func(l string) bool { return strings.HasPrefix(l, "cp ") && strings.Contains(l, " campaigns/") })
		setup := step("runs init", func(l string) bool { return strings.HasPrefix(l, "docker compose run") && strings.Contains(l, " init") })
		up := step("starts the bot", func(l string) bool { return strings.HasPrefix(l, "docker compose up -d") })
		if !(env < setup && uid < setup && file < setup && setup < up) {
			t.Errorf(".env (lines %d, %d) and the campaign file (%d) must come before init (%d), init before up (%d):\n%s", env, uid, file, setup, up, block)
		}
	})
	t.Run("docker compose config", func(t *testing.T) {
		if err := exec.Command("docker", "compose", "version").Run(); err != nil {
			t.Skipf("docker compose is not installed (%v): the checks above parse the files instead", err)
		}
		cmd := exec.Command("docker", "compose", "--profile", "setup", "--profile", "ollama", "config", "--quiet")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil && !strings.Contains(string(out), "config.yaml") {
			t.Errorf("docker compose config: %v\n%s", err, out)
		}
	})
}

// overrideEnvs returns the environment variables that override
// configuration keys.
func overrideEnvs() []string {
	var out []string
	for _, o := range config.Overrides() {
		out = append(out, o.Env)
	}
	return out
}
