package discordtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// OAuth2: the fake answers Discord's authorization code flow
// (https://discord.com/developers/docs/topics/oauth2) for web sign-in:
//
//	GET  /oauth2/authorize?response_type=code&client_id&redirect_uri&scope&state
//	     → 302 to redirect_uri?code=…&state=… as the member set by SetOAuthUser
//	POST /api/oauth2/token  (grant_type=authorization_code, code, redirect_uri,
//	     client id and secret as HTTP Basic auth or form fields)
//	GET  /api/users/@me, /api/users/@me/guilds, /api/users/@me/guilds/{id}/member
//	     with "Authorization: Bearer <access token>"
//
// Codes are single-use and bound to the redirect_uri they were issued for,
// as on Discord.

// OAuthApp is the OAuth2 application the fake accepts.
type OAuthApp struct {
	ClientID, ClientSecret string
}

type oauthGrant struct {
	member      Member
	guildID     string
	redirectURI string
	scope       string
}

// SetOAuthApp registers the OAuth2 application whose client id and secret
// the token endpoint accepts.
func (s *Server) SetOAuthApp(a OAuthApp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oauthApp = a
}

// SetOAuthUser makes the next visits to /oauth2/authorize consent as m, a
// member of guildID (empty: a user in no guild).
func (s *Server) SetOAuthUser(guildID string, m Member) { s.SetOAuthUsers(guildID, m) }

// SetOAuthUsers makes visits to /oauth2/authorize consent as each member in
// turn, members of guildID; the last one stays for later visits.
func (s *Server) SetOAuthUsers(guildID string, ms ...Member) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oauthUsers = s.oauthUsers[:0]
	for _, m := range ms {
		s.oauthUsers = append(s.oauthUsers, oauthGrant{member: m, guildID: guildID})
	}
}

// URL is the base URL of the fake's REST API and OAuth2 pages, e.g.
// http://127.0.0.1:1234; Discord's is https://discord.com.
func (s *Server) URL() string { return s.rest.URL }

// serveOAuth answers the OAuth2 routes; it reports false for other paths.
func (s *Server) serveOAuth(w http.ResponseWriter, r *http.Request, path string) bool {
	switch {
	case r.URL.Path == "/oauth2/authorize" && r.Method == http.MethodGet:
		s.authorize(w, r)
	case path == "/oauth2/token" && r.Method == http.MethodPost:
		s.token(w, r)
	case strings.HasPrefix(path, "/users/@me") && r.Method == http.MethodGet &&
		!strings.HasPrefix(r.Header.Get("Authorization"), "Bot "):
		// A user's OAuth2 token; the bot's own calls are answered as the
		// bot's.
		s.me(w, r, strings.TrimPrefix(path, "/users/@me"))
	default:
		return false
	}
	return true
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	app := s.oauthApp
	var who *oauthGrant
	if len(s.oauthUsers) > 0 {
		g := s.oauthUsers[0]
		who = &g
		if len(s.oauthUsers) > 1 {
			s.oauthUsers = s.oauthUsers[1:]
		}
	}
	s.mu.Unlock()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	switch {
	case q.Get("response_type") != "code":
		http.Error(w, "unsupported response_type", http.StatusBadRequest)
		return
	case app.ClientID == "" || q.Get("client_id") != app.ClientID:
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	case err != nil || !redirect.IsAbs():
		http.Error(w, "invalid redirect_uri", http.StatusBadRequest)
		return
	case who == nil:
		http.Error(w, "fake discord: no user is signed in (SetOAuthUser)", http.StatusUnauthorized)
		return
	}
	code := "code-" + s.NewID()
	g := *who
	g.redirectURI, g.scope = redirect.String(), q.Get("scope")
	s.mu.Lock()
	s.oauthCodes[code] = g
	s.mu.Unlock()
	v := redirect.Query()
	v.Set("code", code)
	if st := q.Get("state"); st != "" {
		v.Set("state", st)
	}
	redirect.RawQuery = v.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.oauthApp.ClientID == "" || id != s.oauthApp.ClientID || secret != s.oauthApp.ClientSecret {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret")
		return
	}
	if r.PostForm.Get("grant_type") != "authorization_code" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "only authorization_code")
		return
	}
	code := r.PostForm.Get("code")
	g, ok := s.oauthCodes[code]
	delete(s.oauthCodes, code)
	if !ok || g.redirectURI != r.PostForm.Get("redirect_uri") {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "invalid \"code\" in request.")
		return
	}
	tok := "token-" + s.NewID()
	s.oauthTokens[tok] = g
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 604800,
		"refresh_token": "refresh-" + tok, "scope": g.scope})
}

func (s *Server) me(w http.ResponseWriter, r *http.Request, rest string) {
	w.Header().Set("Content-Type", "application/json")
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	g, known := s.oauthTokens[tok]
	s.mu.Unlock()
	if !ok || !known {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"message": "401: Unauthorized", "code": 0}`)
		return
	}
	m := g.member.json()
	switch {
	case rest == "":
		json.NewEncoder(w).Encode(m["user"])
	case rest == "/guilds":
		out := []map[string]any{}
		if g.guildID != "" {
			out = append(out, map[string]any{"id": g.guildID, "name": "guild " + g.guildID, "owner": false,
				"permissions": m["permissions"]})
		}
		json.NewEncoder(w).Encode(out)
	case rest == "/guilds/"+g.guildID+"/member" && g.guildID != "":
		delete(m, "permissions") // Discord leaves it out of this endpoint
		json.NewEncoder(w).Encode(m)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"message": "Unknown Guild", "code": 10004}`)
	}
}
