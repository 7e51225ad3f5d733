package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// Cookie names. The session cookie holds only a random id; everything else
// stays on the server.
const (
	sessionCookie = "glyphoxa_console"
	stateCookie   = "glyphoxa_oauth"
)

// oauthScopes are what sign-in asks Discord for: who the user is, the
// guilds they are in with their permissions there, and their roles.
const oauthScopes = "identify guilds guilds.members.read"

// session is one signed-in browser.
type session struct {
	UserID, Name string
	Campaign     string
	DM           bool
	CSRF         string
	Expires      time.Time
	// flash is a message for the next page the session sees.
	flash string
	// saved is set once the sign-in is in the database.
	saved bool
}

type oneTime struct {
	campaign string
	expires  time.Time
}

type oauthState struct {
	campaign string
	expires  time.Time
	seq      uint64 // order of issue, for eviction
}

// maxOAuthStates bounds the Discord sign-ins in progress (each lives ten
// minutes): anyone can start one, so without a bound a stranger could
// fill the memory. Beyond it the oldest is forgotten; its browser is
// asked to sign in again.
const maxOAuthStates = 1024

// evictOldestState forgets the sign-in state issued first. s.mu is held.
func (s *Server) evictOldestState() {
	var oldest string
	var seq uint64
	for k, v := range s.states {
		if oldest == "" || v.seq < seq {
			oldest, seq = k, v.seq
		}
	}
	delete(s.states, oldest)
}

// randomToken returns 32 random bytes, URL-safe.
func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("console: crypto/rand failed: " + err.Error()) // the OS has no entropy: nothing is safe
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// OneTimeLink returns the path of a sign-in link, valid once and for
// Config.LinkTTL, that signs its user in as the DM of campaign. Append it
// to the console's address.
func (s *Server) OneTimeLink(campaign string) (string, error) {
	if _, ok := s.campaign(campaign); !ok {
		return "", fmt.Errorf("console: campaign %q is not served", campaign)
	}
	tok := randomToken()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.links[tok] = oneTime{campaign: campaign, expires: s.clk.Now().Add(s.cfg.LinkTTL)}
	return "/signin/once?token=" + url.QueryEscape(tok), nil
}

// newSession stores a session and sets its cookie.
func (s *Server) newSession(w http.ResponseWriter, r *http.Request, sess session) {
	id := randomToken()
	sess.CSRF = randomToken()
	sess.Expires = s.clk.Now().Add(s.cfg.SessionTTL)
	s.mu.Lock()
	now := s.clk.Now()
	for k, v := range s.sessions { // drop the expired while we hold the lock
		if now.After(v.Expires) {
			delete(s.sessions, k)
		}
	}
	s.sessions[id] = &sess
	s.mu.Unlock()
	s.saveSignIn(r.Context(), id, sess)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, Secure: s.secure(r),
		SameSite: http.SameSiteLaxMode, MaxAge: int(s.cfg.SessionTTL.Seconds())})
	s.log.Info("signed in", "user", sess.UserID, "campaign", sess.Campaign, "dm", sess.DM)
}

// secure reports whether cookies must be Secure: the request came over TLS
// or the console's public address is https.
func (s *Server) secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(s.cfg.PublicURL, "https://")
}

// current returns the request's live session. The database decides when
// it answers: a sign-in made by another console on it counts, one signed
// out there does not; while it is unreachable, the sign-ins this process
// made still work.
func (s *Server) current(r *http.Request) (session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, false
	}
	now := s.clk.Now()
	s.mu.Lock()
	if until, out := s.signedOut[c.Value]; out {
		// Signed out here while the database was down.
		if now.After(until) {
			delete(s.signedOut, c.Value)
		}
		s.mu.Unlock()
		s.flushSignOuts(r.Context())
		return session{}, false
	}
	mem, inMem := s.sessions[c.Value]
	var local session
	if inMem {
		local = *mem
		if now.After(local.Expires) {
			delete(s.sessions, c.Value)
			inMem = false
		}
	}
	s.mu.Unlock()
	in, found, err := s.cfg.Door.SignInByHash(r.Context(), cookieHash(c.Value), now)
	switch {
	case err != nil:
		s.log.Warn("reading a sign-in from the database", "err", err)
		return local, inMem
	default:
		s.flushSignOuts(r.Context())
	}
	switch {
	case !found && inMem && !local.saved:
		// Made while the database was down: keep it there now.
		s.saveSignIn(r.Context(), c.Value, local)
		return local, true
	case !found:
		if inMem { // signed out through another console
			s.mu.Lock()
			delete(s.sessions, c.Value)
			s.mu.Unlock()
		}
		return session{}, false
	}
	if _, served := s.campaign(in.Campaign); !served {
		return session{}, false
	}
	if inMem {
		return local, true
	}
	restored := &session{UserID: in.UserID, Name: in.Name, Campaign: in.Campaign, DM: in.DM, CSRF: in.CSRF, Expires: in.Expires, saved: true}
	s.mu.Lock()
	s.sessions[c.Value] = restored
	s.mu.Unlock()
	return *restored, true
}

// saveSignIn keeps a sign-in in the database, so that a restart (or
// another console on it) does not sign the browser out; without the
// database it lasts as long as this process.
func (s *Server) saveSignIn(ctx context.Context, id string, sess session) {
	err := s.cfg.Door.SaveSignIn(ctx, access.SignIn{IDHash: cookieHash(id), Campaign: sess.Campaign, UserID: sess.UserID,
		Name: sess.Name, DM: sess.DM, CSRF: sess.CSRF, Expires: sess.Expires}, s.clk.Now())
	if err != nil {
		s.log.Warn("the sign-in is not kept in the database yet; it lasts as long as this process until it is", "user", sess.UserID, "err", err)
		return
	}
	s.mu.Lock()
	if m, ok := s.sessions[id]; ok {
		m.saved = true
	}
	s.mu.Unlock()
}

// cookieHash is what the database keeps of a session cookie.
func cookieHash(id string) []byte {
	h := sha256.Sum256([]byte(id))
	return h[:]
}

// setFlash keeps msg for the session's next page.
func (s *Server) setFlash(r *http.Request, msg string) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.sessions[c.Value]; ok {
		sess.flash = msg
	}
}

// takeFlash returns and forgets the session's message.
func (s *Server) takeFlash(r *http.Request) string {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[c.Value]
	if !ok {
		return ""
	}
	msg := sess.flash
	sess.flash = ""
	return msg
}

type ctxKey struct{}

func sessionOf(ctx context.Context) session { s, _ := ctx.Value(ctxKey{}).(session); return s }

// need wraps a handler with the role it requires: no session → the sign-in
// page (401 for the API); a player on a DM page → 403; a write without the
// session's CSRF token or from another origin → 403.
func (s *Server) need(want role, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, ok := s.current(r)
		if !ok {
			if strings.HasPrefix(r.URL.Path, "/api/") || r.Method != http.MethodGet {
				http.Error(w, "sign in first", http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, "/signin", http.StatusSeeOther)
			return
		}
		if want == dmOnly && !sess.DM {
			s.fail(w, r, http.StatusForbidden, "This page is for the DM.")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if !sameOrigin(r) {
				s.fail(w, r, http.StatusForbidden, "This request came from another site.")
				return
			}
			tok := r.Header.Get("X-CSRF-Token")
			if tok == "" {
				tok = r.PostFormValue("csrf")
			}
			if !hmac.Equal([]byte(tok), []byte(sess.CSRF)) {
				s.fail(w, r, http.StatusForbidden, "The form has expired (missing or wrong CSRF token); reload the page and try again.")
				return
			}
		}
		h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, sess)))
	}
}

// sameOrigin checks the Origin header, when the browser sends one, against
// the request's host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

func (s *Server) signinPage(w http.ResponseWriter, r *http.Request) {
	var withDiscord []string
	for _, g := range s.cfg.Campaigns {
		if g.ID != "" && s.cfg.OAuth.ClientID != "" {
			withDiscord = append(withDiscord, g.Campaign)
		}
	}
	s.render(w, r, http.StatusOK, "signin.html", page{Title: "Sign in", Data: map[string]any{
		"Discord": withDiscord, "SignedOut": r.URL.Query().Has("out")}})
}

func (s *Server) signinOnce(w http.ResponseWriter, r *http.Request) {
	tok := r.URL.Query().Get("token")
	s.mu.Lock()
	l, ok := s.links[tok]
	delete(s.links, tok)
	s.mu.Unlock()
	if !ok || s.clk.Now().After(l.expires) {
		s.fail(w, r, http.StatusForbidden, "This sign-in link was already used or has expired; run `glyphoxa console` again for a new one.")
		return
	}
	s.newSession(w, r, session{UserID: "local", Name: "DM (local link)", Campaign: l.campaign, DM: true})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// redirectURI is the OAuth callback address.
func (s *Server) redirectURI(r *http.Request) string {
	base := s.cfg.PublicURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	return strings.TrimRight(base, "/") + "/oauth/callback"
}

func (s *Server) signinDiscord(w http.ResponseWriter, r *http.Request) {
	campaign := r.URL.Query().Get("campaign")
	g, ok := s.campaign(campaign)
	if !ok || g.ID == "" || s.cfg.OAuth.ClientID == "" {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Campaign %q cannot be signed into with Discord here.", campaign))
		return
	}
	state := randomToken()
	s.mu.Lock()
	now := s.clk.Now()
	for k, v := range s.states {
		if now.After(v.expires) {
			delete(s.states, k)
		}
	}
	for len(s.states) >= maxOAuthStates {
		s.evictOldestState()
	}
	s.stateSeq++
	s.states[state] = oauthState{campaign: campaign, expires: now.Add(10 * time.Minute), seq: s.stateSeq}
	s.mu.Unlock()
	// The state is also bound to this browser: a callback carrying a state
	// issued to someone else is refused.
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Value: state, Path: "/oauth/", HttpOnly: true, Secure: s.secure(r),
		SameSite: http.SameSiteLaxMode, MaxAge: 600})
	q := url.Values{"response_type": {"code"}, "client_id": {s.cfg.OAuth.ClientID}, "scope": {oauthScopes},
		"state": {state}, "redirect_uri": {s.redirectURI(r)}}
	http.Redirect(w, r, s.cfg.OAuth.DiscordURL+"/oauth2/authorize?"+q.Encode(), http.StatusFound)
}

func (s *Server) oauthCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	c, err := r.Cookie(stateCookie)
	s.mu.Lock()
	st, ok := s.states[state]
	delete(s.states, state)
	s.mu.Unlock()
	if !ok || err != nil || !hmac.Equal([]byte(c.Value), []byte(state)) || s.clk.Now().After(st.expires) {
		s.fail(w, r, http.StatusForbidden, "This sign-in did not start here or took too long; sign in again.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Path: "/oauth/", MaxAge: -1, HttpOnly: true, Secure: s.secure(r)})
	if e := q.Get("error"); e != "" {
		s.fail(w, r, http.StatusForbidden, "Discord did not sign you in: "+e)
		return
	}
	g, _ := s.campaign(st.campaign)
	who, err := s.discordMember(r.Context(), q.Get("code"), s.redirectURI(r), g.ID)
	if err != nil {
		s.log.Warn("discord sign-in failed", "err", err)
		s.fail(w, r, http.StatusBadGateway, "Signing in with Discord failed: "+err.Error())
		return
	}
	if !who.inGuild {
		s.fail(w, r, http.StatusForbidden, "You are not a member of the Discord server that plays this campaign.")
		return
	}
	dm := bot.IsDM(g, who.id, who.perms, who.roles)
	s.newSession(w, r, session{UserID: who.id, Name: who.name, Campaign: g.Campaign, DM: dm})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

type discordWho struct {
	id, name string
	inGuild  bool
	perms    int64
	roles    []string
}

// discordMember exchanges the code for a token and reads who the user is in
// the guild: their permissions (from their guild list) and roles.
func (s *Server) discordMember(ctx context.Context, code, redirect, guildID string) (discordWho, error) {
	var who discordWho
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.OAuth.DiscordURL+"/api/v10/oauth2/token",
		strings.NewReader(form.Encode()))
	if err != nil {
		return who, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(s.cfg.OAuth.ClientID, s.cfg.OAuth.ClientSecret)
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if err := s.doJSON(req, &tok); err != nil {
		return who, fmt.Errorf("exchanging the code: %w", err)
	}
	if tok.AccessToken == "" {
		return who, fmt.Errorf("exchanging the code: Discord returned no access token")
	}
	get := func(path string, v any) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.OAuth.DiscordURL+"/api/v10"+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		return s.doJSON(req, v)
	}
	var user struct {
		ID         string `json:"id"`
		Username   string `json:"username"`
		GlobalName string `json:"global_name"`
	}
	if err := get("/users/@me", &user); err != nil {
		return who, fmt.Errorf("reading your Discord user: %w", err)
	}
	who.id, who.name = user.ID, user.GlobalName
	if who.name == "" {
		who.name = user.Username
	}
	var guilds []struct {
		ID          string `json:"id"`
		Owner       bool   `json:"owner"`
		Permissions string `json:"permissions"`
	}
	if err := get("/users/@me/guilds", &guilds); err != nil {
		return who, fmt.Errorf("reading your Discord servers: %w", err)
	}
	for _, g := range guilds {
		if g.ID != guildID {
			continue
		}
		who.inGuild = true
		p, err := strconv.ParseInt(g.Permissions, 10, 64)
		if err != nil && g.Permissions != "" {
			return who, fmt.Errorf("reading your permissions: %q is not a number", g.Permissions)
		}
		who.perms = p
		if g.Owner {
			who.perms |= 0x8 // the owner has every permission
		}
	}
	if !who.inGuild {
		return who, nil
	}
	var member struct {
		Roles []string `json:"roles"`
	}
	if err := get("/users/@me/guilds/"+url.PathEscape(guildID)+"/member", &member); err != nil {
		return who, fmt.Errorf("reading your roles: %w", err)
	}
	who.roles = member.Roles
	return who, nil
}

// doJSON sends req and decodes a 2xx JSON answer into v.
func (s *Server) doJSON(req *http.Request, v any) error {
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("discord answered %s: %s", resp.Status, strings.TrimSpace(string(body[:min(len(body), 200)])))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("discord's answer is not the JSON expected: %w", err)
	}
	return nil
}

func (s *Server) signout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.mu.Lock()
		delete(s.sessions, c.Value)
		s.mu.Unlock()
		if err := s.cfg.Door.DeleteSignIn(r.Context(), cookieHash(c.Value)); err != nil {
			// The cookie must not sign anyone in again when the database
			// is back: this console refuses it and removes it there then.
			s.mu.Lock()
			s.signedOut[c.Value] = sessionOf(r.Context()).Expires
			s.mu.Unlock()
			s.log.Warn("the sign-out did not reach the database; this console refuses the cookie and removes the sign-in there once it answers (until then other consoles still take it)", "err", err)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, "/signin?out", http.StatusSeeOther)
}

// flushSignOuts removes from the database the sign-ins signed out here
// while it was down; those it removes are forgotten, the others are tried
// again at the next request.
func (s *Server) flushSignOuts(ctx context.Context) {
	s.mu.Lock()
	var ids []string
	for id := range s.signedOut {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		if err := s.cfg.Door.DeleteSignIn(ctx, cookieHash(id)); err != nil {
			s.log.Debug("a sign-out still does not reach the database", "err", err)
			return
		}
		s.mu.Lock()
		delete(s.signedOut, id)
		s.mu.Unlock()
	}
}
