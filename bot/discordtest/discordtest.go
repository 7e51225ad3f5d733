// Package discordtest is a local fake of Discord for tests: a REST API
// (httptest) and a gateway WebSocket that speak Discord's wire format, so a
// real discordgo session connects to it, receives dispatches
// (INTERACTION_CREATE, GUILD_CREATE, VOICE_SERVER_UPDATE…) and makes REST
// calls the test can assert on.
//
// Point a discordgo session at it with [Server.Attach], which swaps the
// session's HTTP transport for one that sends discord.com requests here.
// [Server.FailNext] makes chosen calls fail as the network or Discord's
// edge does (a dropped connection, a lost answer, a 502 or 503).
package discordtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// Call is one REST request the bot made.
type Call struct {
	Method string
	// Path is relative to /api/v9, e.g. /interactions/1/tok/callback.
	Path string
	Body json.RawMessage
}

// Decode unmarshals the call's JSON body into v.
func (c Call) Decode(v any) error { return json.Unmarshal(c.Body, v) }

// Server is a running fake Discord.
type Server struct {
	rest *httptest.Server

	BotUser *discordgo.User
	AppID   string
	// Token, when set before the first request, is the only bot token the
	// REST API accepts: other requests get Discord's 401.
	Token string

	mu      sync.Mutex
	calls   []Call
	guilds  []*discordgo.Guild
	members map[string]*discordgo.Member // guild/user
	// messages are the messages the bot posted, by channel, oldest first
	// (deleted ones taken out).
	messages map[string][]discordgo.Message
	conns    []*gwConn
	identify chan json.RawMessage
	gwOps    chan GatewayOp
	nextID   atomic.Int64
	seq      atomic.Int64
	waiters  []waiter
	faults   []*fault
	faulted  []Call

	voiceEndpoint  string
	voiceEndpoints map[string]string // by guild, over voiceEndpoint
	voiceSeq       int
	voiceAnswering int // op 4 answers not yet dispatched

	// tokens are the interactions built by this fake, by token: when
	// (on the fake's clock), whether the test expired them and whether
	// they were acknowledged.
	tokens    map[string]*token
	clock     time.Duration // the fake's clock: moved by Advance only
	ackWindow time.Duration // 0: no interaction expires by age

	oauthApp    OAuthApp
	oauthUsers  []oauthGrant
	oauthCodes  map[string]oauthGrant
	oauthTokens map[string]oauthGrant
}

// GatewayOp is a message the bot sent on the gateway (other than
// heartbeats), e.g. op 4 voice state updates.
type GatewayOp struct {
	Op   int
	Data json.RawMessage
}

type waiter struct {
	match func(Call) bool
	ch    chan Call
}

// New starts a fake Discord.
func New() *Server {
	s := &Server{
		BotUser:  &discordgo.User{ID: "900000000000000001", Username: "glyphoxa", Bot: true},
		AppID:    "900000000000000002",
		members:  map[string]*discordgo.Member{},
		messages: map[string][]discordgo.Message{},
		tokens:   map[string]*token{},
		identify: make(chan json.RawMessage, 4),
		gwOps:    make(chan GatewayOp, 64),

		oauthCodes:  map[string]oauthGrant{},
		oauthTokens: map[string]oauthGrant{},
	}
	s.nextID.Store(1_000_000_000_000_000)
	s.rest = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Close stops the fake and its gateway connections.
func (s *Server) Close() {
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.rest.Close()
}

// AddGuild makes a guild known: it is sent in GUILD_CREATE after READY.
func (s *Server) AddGuild(g *discordgo.Guild) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guilds = append(s.guilds, g)
	for _, m := range g.Members {
		s.members[g.ID+"/"+m.User.ID] = m
	}
}

// AddMember makes a member of guildID known to the member lookup (GET
// /guilds/{guild}/members/{user}).
func (s *Server) AddMember(guildID string, m *discordgo.Member) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.members[guildID+"/"+m.User.ID] = m
}

// Attach points a discordgo session at the fake: REST requests to
// discord.com go to the fake instead, and the gateway URL the session asks
// for is the fake's.
func (s *Server) Attach(sess *discordgo.Session) {
	target, _ := url.Parse(s.rest.URL)
	sess.Client = &http.Client{Timeout: 10 * time.Second, Transport: rewrite{target: target}}
}

type rewrite struct{ target *url.URL }

func (r rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme = r.target.Scheme
	req.URL.Host = r.target.Host
	req.Host = r.target.Host
	return http.DefaultTransport.RoundTrip(req)
}

// NewID returns a fresh snowflake.
func (s *Server) NewID() string { return strconv.FormatInt(s.nextID.Add(1), 10) }

// Calls returns the REST calls so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// WaitCall waits for a REST call matching match (already made or future).
func (s *Server) WaitCall(timeout time.Duration, match func(Call) bool) (Call, error) {
	s.mu.Lock()
	for _, c := range s.calls {
		if match(c) {
			s.mu.Unlock()
			return c, nil
		}
	}
	w := waiter{match: match, ch: make(chan Call, 1)}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	select {
	case c := <-w.ch:
		return c, nil
	case <-time.After(timeout):
		return Call{}, fmt.Errorf("no matching REST call within %s; calls: %s", timeout, s.describeCalls())
	}
}

func (s *Server) describeCalls() string {
	var b strings.Builder
	for _, c := range s.Calls() {
		fmt.Fprintf(&b, "\n  %s %s", c.Method, c.Path)
	}
	return b.String()
}

// PathIs matches calls by method and path.
func PathIs(method, path string) func(Call) bool {
	return func(c Call) bool { return c.Method == method && c.Path == path }
}

// PathHasPrefix matches calls by method and path prefix.
func PathHasPrefix(method, prefix string) func(Call) bool {
	return func(c Call) bool { return c.Method == method && strings.HasPrefix(c.Path, prefix) }
}

func (s *Server) record(c Call) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	var keep []waiter
	for _, w := range s.waiters {
		if w.match(c) {
			w.ch <- c
		} else {
			keep = append(keep, w)
		}
	}
	s.waiters = keep
	s.mu.Unlock()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/gateway-ws") {
		s.serveGateway(w, r)
		return
	}
	path := apiPath(r.URL.Path)
	if s.serveOAuth(w, r, path) {
		return // not recorded: sign-in is not a bot call
	}
	body, _ := io.ReadAll(r.Body)
	if len(body) == 0 {
		body = []byte("null")
	}
	c := Call{Method: r.Method, Path: path, Body: json.RawMessage(body)}
	if f, ok := s.takeFault(c); ok {
		failCall(w, f, func(w http.ResponseWriter) { s.handle(w, r, c) })
		return
	}
	s.handle(w, r, c)
}

// handle answers a REST call and records it.
func (s *Server) handle(w http.ResponseWriter, r *http.Request, c Call) {
	path, body := c.Path, []byte(c.Body)
	w.Header().Set("Content-Type", "application/json")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if s.Token != "" && r.Header.Get("Authorization") != "Bot "+s.Token {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"message": "401: Unauthorized", "code": 0}`)
		s.record(c)
		return
	}
	switch {
	case r.Method == http.MethodGet && path == "/users/@me":
		json.NewEncoder(w).Encode(s.BotUser)
	case r.Method == http.MethodGet && path == "/oauth2/applications/@me":
		json.NewEncoder(w).Encode(map[string]any{"id": s.AppID, "name": s.BotUser.Username, "bot_public": true,
			"bot": s.BotUser})
	case r.Method == http.MethodGet && path == "/users/@me/guilds":
		s.mu.Lock()
		gs := make([]map[string]any, 0, len(s.guilds))
		for _, g := range s.guilds {
			gs = append(gs, map[string]any{"id": g.ID, "name": g.Name})
		}
		s.mu.Unlock()
		json.NewEncoder(w).Encode(gs)
	case r.Method == http.MethodGet && path == "/gateway":
		json.NewEncoder(w).Encode(map[string]string{"url": "ws://" + r.Host + "/gateway-ws"})
		return // not recorded: plumbing
	case r.Method == http.MethodPut && len(parts) == 5 && parts[0] == "applications" && parts[4] == "commands":
		var cmds []*discordgo.ApplicationCommand
		json.Unmarshal(body, &cmds)
		for _, cmd := range cmds {
			cmd.ID, cmd.ApplicationID, cmd.GuildID = s.NewID(), parts[1], parts[3]
		}
		json.NewEncoder(w).Encode(cmds)
	case r.Method == http.MethodPost && path == "/users/@me/channels":
		// A direct message channel with a user: its id is DMChannel's.
		var req struct {
			RecipientID string `json:"recipient_id"`
		}
		json.Unmarshal(body, &req)
		json.NewEncoder(w).Encode(map[string]any{"id": DMChannel(req.RecipientID), "type": 1,
			"recipients": []map[string]any{{"id": req.RecipientID}}})
	case r.Method == http.MethodPost && len(parts) == 4 && parts[0] == "interactions" && parts[3] == "callback":
		switch s.callback(parts[2]) {
		case callbackExpired:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, unknownInteraction)
		case callbackRepeated:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"message": "Interaction has already been acknowledged.", "code": 40060}`)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	case parts[0] == "webhooks" && len(parts) >= 3 && s.unusable(parts[2]):
		// An interaction never acknowledged has no webhook to answer on.
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"message": "Unknown Webhook", "code": 10015}`)
	case parts[0] == "webhooks":
		var m discordgo.Message
		json.Unmarshal(body, &m)
		m.ID = s.NewID()
		json.NewEncoder(w).Encode(m)
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages":
		var m discordgo.Message
		json.Unmarshal(body, &m)
		m.ID, m.ChannelID, m.Author = s.NewID(), parts[1], s.BotUser
		s.mu.Lock()
		s.messages[parts[1]] = append(s.messages[parts[1]], m)
		s.mu.Unlock()
		json.NewEncoder(w).Encode(m)
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages":
		json.NewEncoder(w).Encode(s.history(parts[1], r.URL.Query()))
	case r.Method == http.MethodDelete && len(parts) == 4 && parts[0] == "channels" && parts[2] == "messages":
		if !s.deleteMessage(parts[1], parts[3]) {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message": "Unknown Message", "code": 10008}`)
			break
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodGet && len(parts) == 4 && parts[0] == "guilds" && parts[2] == "members":
		s.mu.Lock()
		m, ok := s.members[parts[1]+"/"+parts[3]]
		s.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message": "Unknown Member", "code": 10007}`)
			break
		}
		json.NewEncoder(w).Encode(m)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"message": "fake discord has no route %s %s", "code": 0}`, r.Method, path)
	}
	s.record(c)
}

// history answers GET /channels/{id}/messages as Discord does: the
// newest messages first, at most limit (default 50, at most 100), older
// than the message id before when given.
func (s *Server) history(channelID string, q url.Values) []discordgo.Message {
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit <= 0 {
		limit = 50
	}
	limit = min(limit, 100)
	before, _ := strconv.ParseInt(q.Get("before"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []discordgo.Message{}
	ms := s.messages[channelID]
	for i := len(ms) - 1; i >= 0 && len(out) < limit; i-- {
		if id, _ := strconv.ParseInt(ms[i].ID, 10, 64); before != 0 && id >= before {
			continue
		}
		out = append(out, ms[i])
	}
	return out
}

// deleteMessage takes message id out of a channel; it reports whether the
// channel held it.
func (s *Server) deleteMessage(channelID, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := s.messages[channelID]
	for i, m := range ms {
		if m.ID == id {
			s.messages[channelID] = append(ms[:i:i], ms[i+1:]...)
			return true
		}
	}
	return false
}

// Messages returns the messages the bot posted in a channel and did not
// delete, oldest first.
func (s *Server) Messages(channelID string) []discordgo.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]discordgo.Message(nil), s.messages[channelID]...)
}

// DMChannel is the id of the fake's direct message channel with a user.
func DMChannel(userID string) string { return "dm" + userID }

// apiPath strips /api and an optional /vN version from a REST path.
func apiPath(p string) string {
	rest, ok := strings.CutPrefix(p, "/api")
	if !ok {
		return p
	}
	if v, ok := strings.CutPrefix(rest, "/v"); ok {
		if i := strings.IndexByte(v, '/'); i > 0 {
			if _, err := strconv.Atoi(v[:i]); err == nil {
				return v[i:]
			}
		}
	}
	return rest
}

// gwConn is one gateway connection.
type gwConn struct {
	ws   *websocket.Conn
	wmu  sync.Mutex
	once sync.Once
	done chan struct{}
}

func (c *gwConn) send(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteJSON(v)
}

func (c *gwConn) close() {
	c.once.Do(func() {
		close(c.done)
		c.ws.Close()
	})
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &gwConn{ws: ws, done: make(chan struct{})}
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.mu.Unlock()
	defer c.close()
	if err := c.send(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": 45000}}); err != nil {
		return
	}
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var op struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if json.Unmarshal(msg, &op) != nil {
			continue
		}
		switch op.Op {
		case 1: // heartbeat
			c.send(map[string]any{"op": 11})
		case 2: // identify
			select {
			case s.identify <- op.D:
			default:
			}
			s.ready(c)
		case 4: // voice state update
			s.answerVoiceState(op.D)
			select {
			case s.gwOps <- GatewayOp{Op: op.Op, Data: op.D}:
			default:
			}
		default:
			select {
			case s.gwOps <- GatewayOp{Op: op.Op, Data: op.D}:
			default:
			}
		}
	}
}

func (s *Server) ready(c *gwConn) {
	s.mu.Lock()
	guilds := append([]*discordgo.Guild(nil), s.guilds...)
	s.mu.Unlock()
	var unavailable []map[string]any
	for _, g := range guilds {
		unavailable = append(unavailable, map[string]any{"id": g.ID, "unavailable": true})
	}
	s.dispatchTo(c, "READY", map[string]any{"v": 10, "session_id": "fake-session", "user": s.BotUser,
		"application": map[string]any{"id": s.AppID}, "guilds": unavailable})
	for _, g := range guilds {
		s.dispatchTo(c, "GUILD_CREATE", g)
	}
}

func (s *Server) dispatchTo(c *gwConn, t string, d any) error {
	return c.send(map[string]any{"op": 0, "t": t, "s": s.seq.Add(1), "d": d})
}

// Dispatch sends an event to every connected gateway client.
func (s *Server) Dispatch(t string, d any) error {
	s.mu.Lock()
	conns := append([]*gwConn(nil), s.conns...)
	s.mu.Unlock()
	if len(conns) == 0 {
		return fmt.Errorf("no gateway connection to dispatch %s to", t)
	}
	// A client that went away (a killed process) does not keep the others
	// from getting the event.
	var errs []error
	for _, c := range conns {
		if err := s.dispatchTo(c, t, d); err != nil {
			errs = append(errs, err)
			c.close()
			s.mu.Lock()
			s.conns = slices.DeleteFunc(s.conns, func(x *gwConn) bool { return x == c })
			s.mu.Unlock()
		}
	}
	if len(errs) == len(conns) {
		return errors.Join(errs...)
	}
	return nil
}

// WaitIdentify waits for the bot's identify payload.
func (s *Server) WaitIdentify(timeout time.Duration) (json.RawMessage, error) {
	select {
	case d := <-s.identify:
		return d, nil
	case <-time.After(timeout):
		return nil, fmt.Errorf("the bot did not identify within %s", timeout)
	}
}

// GatewayOps delivers the non-heartbeat ops the bot sends.
func (s *Server) GatewayOps() <-chan GatewayOp { return s.gwOps }

// SetVoiceEndpoint makes the fake answer the bot's voice state updates
// (op 4) like Discord: VOICE_STATE_UPDATE with a session id, then
// VOICE_SERVER_UPDATE with a token and this endpoint (e.g. a
// voicetest.Server's).
func (s *Server) SetVoiceEndpoint(endpoint string) {
	s.mu.Lock()
	s.voiceEndpoint = endpoint
	s.mu.Unlock()
}

// SetGuildVoiceEndpoint sets the voice server one guild's joins are sent
// to (a fake voice server serves one guild's channels), over the endpoint
// of SetVoiceEndpoint.
func (s *Server) SetGuildVoiceEndpoint(guildID, endpoint string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.voiceEndpoints == nil {
		s.voiceEndpoints = map[string]string{}
	}
	s.voiceEndpoints[guildID] = endpoint
}

func (s *Server) answerVoiceState(d json.RawMessage) {
	var v struct {
		GuildID   string  `json:"guild_id"`
		ChannelID *string `json:"channel_id"`
	}
	if json.Unmarshal(d, &v) != nil {
		return
	}
	s.mu.Lock()
	endpoint := s.voiceEndpoint
	if e, ok := s.voiceEndpoints[v.GuildID]; ok {
		endpoint = e
	}
	s.voiceSeq++
	n := s.voiceSeq
	s.mu.Unlock()
	if endpoint == "" {
		return
	}
	channel := ""
	if v.ChannelID != nil {
		channel = *v.ChannelID
	}
	s.mu.Lock()
	s.voiceAnswering++
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			s.voiceAnswering--
			s.mu.Unlock()
		}()
		s.Dispatch("VOICE_STATE_UPDATE", map[string]any{"guild_id": v.GuildID, "channel_id": nullable(channel),
			"user_id": s.BotUser.ID, "session_id": fmt.Sprintf("voice-session-%d", n), "deaf": false, "mute": false,
			"self_deaf": false, "self_mute": false, "suppress": false})
		if channel != "" {
			s.Dispatch("VOICE_SERVER_UPDATE", map[string]any{"token": fmt.Sprintf("voice-token-%d", n), "guild_id": v.GuildID,
				"endpoint": endpoint})
		}
	}()
}

// WaitVoiceAnswers waits until every voice state update the fake has
// read (and put on GatewayOps) has been answered: its VOICE_STATE_UPDATE
// and VOICE_SERVER_UPDATE are dispatched, which happens asynchronously, as
// on Discord, so a test that moves the bot after a join knows the join's
// answer cannot come after the move.
func (s *Server) WaitVoiceAnswers(ctx context.Context) error {
	for {
		s.mu.Lock()
		n := s.voiceAnswering
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%d voice state updates still unanswered: %w", n, ctx.Err())
		}
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// MoveBot moves the bot to another voice channel, as a member with the
// Move Members permission would: a voice state update, then a new token.
func (s *Server) MoveBot(guildID, channelID string) error {
	s.mu.Lock()
	s.voiceSeq++
	n := s.voiceSeq
	endpoint := s.voiceEndpoint
	s.mu.Unlock()
	if err := s.Dispatch("VOICE_STATE_UPDATE", map[string]any{"guild_id": guildID, "channel_id": channelID,
		"user_id": s.BotUser.ID, "session_id": fmt.Sprintf("voice-session-%d", n)}); err != nil {
		return err
	}
	return s.Dispatch("VOICE_SERVER_UPDATE", map[string]any{"token": fmt.Sprintf("voice-token-%d", n), "guild_id": guildID,
		"endpoint": endpoint})
}

// SetUserVoice puts a member in a voice channel (or none), as seen by the
// bot.
func (s *Server) SetUserVoice(guildID, userID, channelID string) error {
	return s.Dispatch("VOICE_STATE_UPDATE", map[string]any{"guild_id": guildID, "channel_id": nullable(channelID),
		"user_id": userID, "session_id": "user-" + userID})
}
