package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/bwmarrin/discordgo"
	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
	"github.com/glyphoxa/glyphoxa/npc"
)

// Invite is what the bot asks for when it is added to a server: the scopes
// to register its slash commands and join as a bot, and the permissions it
// uses — to see the voice and text channels, to announce sessions in text,
// and to join and speak in voice. Nothing more.
const (
	inviteScopes      = "bot applications.commands"
	invitePermissions = discordgo.PermissionViewChannel | discordgo.PermissionSendMessages |
		discordgo.PermissionVoiceConnect | discordgo.PermissionVoiceSpeak
)

// inviteURL is the OAuth2 URL that adds the bot to a server.
func inviteURL(appID string) string {
	q := url.Values{}
	q.Set("client_id", appID)
	q.Set("scope", inviteScopes)
	q.Set("permissions", strconv.FormatInt(invitePermissions, 10))
	return "https://discord.com/oauth2/authorize?" + q.Encode()
}

// defaultDSN is the database of `make db`-less local installs and of the
// example configuration.
const defaultDSN = "postgres://glyphoxa:glyphoxa@127.0.0.1:5432/glyphoxa?sslmode=disable"

var (
	snowflake  = regexp.MustCompile(`^[0-9]{17,20}$`)
	campaignID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
)

// cmdInit is the guided set-up: it writes config.yaml, checks the Discord
// token, prints the invite URL, binds a guild to a campaign, imports a
// campaign file and ends with `config check`.
func cmdInit(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("init", e)
	out := fs.String("config", "", "the configuration file to write (default: $GLYPHOXA_CONFIG, else ./config.yaml)")
	nonInteractive := fs.Bool("non-interactive", false, "ask nothing: take every answer from the flags and the environment")
	force := fs.Bool("force", false, "overwrite an existing configuration file")
	token := fs.String("token", "", "the bot token from the Discord developer portal (default: $DISCORD_TOKEN or $GLYPHOXA_DISCORD_TOKEN, which then stays out of the file)")
	guild := fs.String("guild", "", "the Discord server (guild) id to play in")
	campaign := fs.String("campaign", "", "the campaign the guild plays (default: the imported file's campaign)")
	importFile := fs.String("import", "", "a campaign file to import (entities, NPCs, transcripts)")
	dsn := fs.String("dsn", "", "PostgreSQL DSN to write into the file (default: $GLYPHOXA_DSN, which then stays out of the file)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	p := newPrompter(e, !*nonInteractive)

	// 1. Where the configuration goes.
	path := *out
	if path == "" {
		path = e.getenv("GLYPHOXA_CONFIG")
	}
	if path == "" {
		path = "config.yaml"
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory (Docker creates one when config.yaml is mounted before it exists): remove it and run init again", path)
		}
		ok := *force
		if !ok && p.interactive {
			ans, err := p.ask(fmt.Sprintf("%s exists. Overwrite it?", path), "no")
			if err != nil {
				return err
			}
			ok = strings.HasPrefix(strings.ToLower(ans), "y")
		}
		if !ok {
			return fmt.Errorf("%s exists; pass --force to overwrite it", path)
		}
	}
	printf(e.stdout, "glyphoxa set-up: writing %s\n\n", path)

	// 2. The bot token, checked against Discord's REST API when reachable.
	tok, tokenFromEnv := strings.TrimSpace(*token), false
	if tok == "" {
		for _, k := range []string{"DISCORD_TOKEN", "GLYPHOXA_DISCORD_TOKEN"} {
			if v := strings.TrimSpace(e.getenv(k)); v != "" {
				tok, tokenFromEnv = v, true
				break
			}
		}
	}
	var bot botInfo
	for try := 1; ; try++ {
		if tok == "" {
			if !p.interactive {
				return usagef("--token is required (or set DISCORD_TOKEN): the bot token from https://discord.com/developers/applications")
			}
			var err error
			if tok, err = p.secret("Discord bot token (Developer Portal → your application → Bot → Reset Token; not shown as you type)"); err != nil {
				return err
			}
			tok = strings.TrimSpace(tok)
			if tok == "" {
				continue
			}
		}
		var err error
		bot, err = checkToken(ctx, e, tok)
		if err == nil {
			printf(e.stdout, "✓ token accepted: bot %q, application %s\n", bot.name, bot.appID)
			break
		}
		if errors.Is(err, errTokenRefused) {
			if p.interactive && !tokenFromEnv && try < 3 {
				printf(e.stdout, "✗ %v; try again\n", err)
				tok = ""
				continue
			}
			return err
		}
		printf(e.stdout, "! could not reach Discord to check the token (%v); going on without checking it\n", err)
		bot.appID = appIDFromToken(tok)
		break
	}

	// 3. The invite URL.
	if bot.appID != "" {
		printf(e.stdout, "\nInvite the bot to your server with exactly the permissions it needs\n(View Channels, Send Messages, Connect, Speak; scopes %s):\n  %s\n\n", inviteScopes, inviteURL(bot.appID))
	} else {
		printf(e.stdout, "\nInvite the bot from the Developer Portal (OAuth2 → URL Generator): scopes %s, permissions %d (View Channels, Send Messages, Connect, Speak).\n\n", inviteScopes, invitePermissions)
	}

	// 4. The guild.
	g := strings.TrimSpace(*guild)
	if g == "" {
		if !p.interactive {
			return usagef("--guild is required: the id of the Discord server to play in (Discord: Settings → Advanced → Developer Mode, then right-click the server → Copy Server ID)")
		}
		for g == "" {
			if len(bot.guilds) > 0 {
				printf(e.stdout, "The bot is in these servers:\n")
				for i, x := range bot.guilds {
					printf(e.stdout, "  %d. %s (%s)\n", i+1, x.Name, x.ID)
				}
			}
			ans, err := p.ask("Server (guild) to play in: a number above or a server id", "")
			if err != nil {
				return err
			}
			if n, err := strconv.Atoi(ans); err == nil && n >= 1 && n <= len(bot.guilds) {
				g = bot.guilds[n-1].ID
			} else if snowflake.MatchString(ans) {
				g = ans
			} else {
				printf(e.stdout, "✗ %q is neither a number from the list nor a server id (17 to 20 digits)\n", ans)
			}
		}
	}
	if !snowflake.MatchString(g) {
		return usagef("--guild %q is not a Discord server id (17 to 20 digits)", g)
	}
	if bot.checked && !bot.inGuild(g) {
		printf(e.stdout, "! the bot is not in server %s yet: open the invite URL above to add it\n", g)
	}

	// 5. The campaign, and the file to import.
	file := strings.TrimSpace(*importFile)
	if file == "" && p.interactive {
		ans, err := p.ask("Campaign file to import (a path; empty for none)", "")
		if err != nil {
			return err
		}
		file = ans
	}
	var fileCampaign string
	if file != "" {
		cf, err := parseCampaignFile(file)
		if err != nil {
			return err
		}
		fileCampaign = cf.Campaign
		c := cf.Counts()
		npcs := 0
		for _, en := range cf.Entities {
			if en.Type == memory.EntityNPC {
				npcs++
			}
		}
		printf(e.stdout, "✓ %s: campaign %q, %d entities (%d NPCs), %d relationships, %d sessions\n", file, cf.Campaign, c.Entities, npcs,
			c.Relationships, c.Sessions)
	}
	camp := strings.TrimSpace(*campaign)
	if camp == "" {
		camp = fileCampaign
		if p.interactive {
			def := camp
			if def == "" {
				def = "my-campaign"
			}
			for {
				ans, err := p.ask("Campaign id this server plays", def)
				if err != nil {
					return err
				}
				if campaignID.MatchString(ans) {
					camp = ans
					break
				}
				printf(e.stdout, "✗ %q: a campaign id is lower-case letters, digits, - and _\n", ans)
			}
		}
	}
	switch {
	case camp == "":
		return usagef("--campaign is required when no campaign file is imported")
	case !campaignID.MatchString(camp):
		return usagef("--campaign %q: a campaign id is lower-case letters, digits, - and _ (at most 64)", camp)
	case fileCampaign != "" && camp != fileCampaign:
		return usagef("campaign %q does not match the campaign %q of %s", camp, fileCampaign, file)
	}

	// 6. The database.
	d := strings.TrimSpace(*dsn)
	if d == "" && e.getenv("GLYPHOXA_DSN") == "" && p.interactive {
		ans, err := p.ask("PostgreSQL DSN (with pgvector)", defaultDSN)
		if err != nil {
			return err
		}
		d = ans
	}

	// 7. The file.
	text, err := initConfigYAML(tok, tokenFromEnv, g, camp, d)
	if err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	// It may hold the bot token: only its owner reads it.
	if err := os.WriteFile(path, text, 0o600); err != nil {
		if errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("writing %s: %w (in Docker, run init as yourself: docker compose run --rm --user \"$(id -u):$(id -g)\" init)", path, err)
		}
		return fmt.Errorf("writing %s: %w", path, err)
	}
	printf(e.stdout, "✓ wrote %s: server %s plays campaign %q\n", path, g, camp)

	// 8. The import, with the configuration just written.
	if file != "" {
		if err := cmdImport(ctx, e, []string{"--config", path, file}); err != nil {
			return fmt.Errorf("importing %s (the configuration is written; retry with glyphoxa import --config %s %s): %w", file, path, file, err)
		}
	}

	// 9. The check.
	if err := cmdConfig(ctx, e, []string{"check", "--config", path}); err != nil {
		return fmt.Errorf("config check: %w", err)
	}
	printf(e.stdout, "\nDone. Start the bot with `glyphoxa serve --config %s` (or `docker compose up -d`), then type /session start in a voice channel.\n", path)
	return nil
}

func parseCampaignFile(path string) (*campaignfile.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the campaign file: %w", err)
	}
	defer f.Close()
	return campaignfile.Parse(f, path)
}

// initConfigYAML renders the configuration init writes: the answers, and
// pointers to every other key.
func initConfigYAML(token string, tokenFromEnv bool, guild, campaign, dsn string) ([]byte, error) {
	type guildYAML struct {
		GuildID  string `yaml:"guild_id"`
		Campaign string `yaml:"campaign"`
	}
	var c struct {
		Discord struct {
			Token  string      `yaml:"token"`
			Guilds []guildYAML `yaml:"guilds"`
		} `yaml:"discord"`
		Memory *struct {
			PostgresDSN string `yaml:"postgres_dsn"`
		} `yaml:"memory,omitempty"`
	}
	c.Discord.Token = token
	if tokenFromEnv {
		c.Discord.Token = "${DISCORD_TOKEN:-}"
	}
	c.Discord.Guilds = []guildYAML{{GuildID: guild, Campaign: campaign}}
	if dsn != "" {
		c.Memory = &struct {
			PostgresDSN string `yaml:"postgres_dsn"`
		}{dsn}
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return nil, err
	}
	head := `# glyphoxa configuration, written by glyphoxa init.
# Every other key keeps its default; config.example.yaml lists them all.
# Environment variables override keys: GLYPHOXA_DSN, GLYPHOXA_DISCORD_TOKEN,
# GLYPHOXA_LLM_BASE_URL, GLYPHOXA_LLM_API_KEY, GLYPHOXA_LLM_MODEL, …
# Check it with: glyphoxa config check
# providers.llm: ` + npc.OfflineBehaviour + `
`
	return append([]byte(head), b...), nil
}

// botInfo is what Discord says about the token's bot.
type botInfo struct {
	checked bool
	name    string
	appID   string
	guilds  []*discordgo.UserGuild
}

func (b botInfo) inGuild(id string) bool {
	for _, g := range b.guilds {
		if g.ID == id {
			return true
		}
	}
	return false
}

// errTokenRefused is Discord's 401: the token is wrong.
var errTokenRefused = errors.New("Discord refused the token (401 Unauthorized): copy it again from the Developer Portal (Bot → Reset Token)")

// checkToken asks Discord who the token's bot is, which application it
// belongs to and which servers it is in.
func checkToken(ctx context.Context, e *env, token string) (botInfo, error) {
	sess, err := discordgo.New("Bot " + token)
	if err != nil {
		return botInfo{}, err
	}
	if e.discord != nil {
		sess.Client = e.discord.Client // tests: the fake Discord
	}
	sess.MaxRestRetries = 0
	// A 429 is handled as the bot handles it: a long wait is given up at
	// once, not slept through, and the error says so.
	bot.BoundRateLimits(sess, slog.New(slog.DiscardHandler))
	opt := discordgo.WithContext(ctx)
	u, err := sess.User("@me", opt)
	if err != nil {
		var re *discordgo.RESTError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized {
			return botInfo{}, errTokenRefused
		}
		return botInfo{}, err
	}
	info := botInfo{checked: true, name: u.Username, appID: u.ID}
	if app, err := sess.Application("@me"); err == nil && app.ID != "" {
		info.appID = app.ID
	}
	if gs, err := sess.UserGuilds(200, "", "", false, opt); err == nil {
		info.guilds = gs
	}
	return info, nil
}

// appIDFromToken reads the bot's id from its token (its first part is the
// id in base64); for bots, the id is the application's.
func appIDFromToken(token string) string {
	first, _, _ := strings.Cut(token, ".")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.StdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(first); err == nil && snowflake.Match(b) {
			return string(b)
		}
	}
	return ""
}

// prompter asks questions on the terminal.
type prompter struct {
	interactive bool
	in          *bufio.Reader
	out         io.Writer
	tty         *os.File // stdin, when it is a terminal
}

func newPrompter(e *env, interactive bool) *prompter {
	p := &prompter{interactive: interactive, in: bufio.NewReader(e.stdin), out: e.stdout}
	if f, ok := e.stdin.(*os.File); ok && isTerminal(f) {
		p.tty = f
	}
	return p
}

// ask prints a question with its default and reads one line.
func (p *prompter) ask(q, def string) (string, error) {
	if def != "" {
		printf(p.out, "%s [%s]: ", q, def)
	} else {
		printf(p.out, "%s: ", q)
	}
	line, err := p.in.ReadString('\n')
	if err != nil && (err != io.EOF || line == "") {
		return "", fmt.Errorf("no answer to %q (input closed; use --non-interactive with flags)", q)
	}
	line = strings.TrimSpace(line)
	if line == "" {
		return def, nil
	}
	return line, nil
}

// secret reads a line without echoing it when stdin is a terminal.
func (p *prompter) secret(q string) (string, error) {
	if p.tty != nil {
		restore, err := noEcho(p.tty)
		if err == nil {
			defer func() {
				restore()
				printf(p.out, "\n")
			}()
		}
	}
	return p.ask(q, "")
}
