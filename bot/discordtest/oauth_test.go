package discordtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot/discordtest"
)

// authorize runs the consent step and returns the code it redirects with.
func authorize(t *testing.T, s *discordtest.Server, redirect string) string {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	q := url.Values{"response_type": {"code"}, "client_id": {"app"}, "redirect_uri": {redirect}, "scope": {"identify guilds"}, "state": {"st"}}
	resp, err := c.Get(s.URL() + "/oauth2/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || loc.Query().Get("state") != "st" || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code")
}

func exchange(t *testing.T, s *discordtest.Server, secret, code, redirect string) (int, map[string]any) {
	t.Helper()
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}}
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/api/v10/oauth2/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("app", secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	json.NewDecoder(resp.Body).Decode(&v)
	return resp.StatusCode, v
}

func TestOAuthCodeFlow(t *testing.T) {
	s := discordtest.New()
	defer s.Close()
	s.SetOAuthApp(discordtest.OAuthApp{ClientID: "app", ClientSecret: "secret"})
	s.SetOAuthUser("42", discordtest.Member{UserID: "7", Name: "Ada", Roles: []string{"9"}, Admin: true})
	const redirect = "http://127.0.0.1:1/oauth/callback"

	tests := []struct {
		name      string
		secret    string
		redirect  string
		reuse     bool
		status    int
		wantError string
	}{
		{"wrong secret", "nope", redirect, false, http.StatusUnauthorized, "invalid_client"},
		{"other redirect", "secret", "http://elsewhere/cb", false, http.StatusBadRequest, "invalid_grant"},
		{"used code", "secret", redirect, true, http.StatusBadRequest, "invalid_grant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code := authorize(t, s, redirect)
			if tt.reuse {
				if st, _ := exchange(t, s, "secret", code, redirect); st != http.StatusOK {
					t.Fatalf("first exchange: %d", st)
				}
			}
			st, v := exchange(t, s, tt.secret, code, tt.redirect)
			if st != tt.status || v["error"] != tt.wantError {
				t.Fatalf("got %d %v, want %d %s", st, v, tt.status, tt.wantError)
			}
		})
	}

	st, v := exchange(t, s, "secret", authorize(t, s, redirect), redirect)
	tok, _ := v["access_token"].(string)
	if st != http.StatusOK || tok == "" || v["token_type"] != "Bearer" {
		t.Fatalf("token: %d %v", st, v)
	}
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, s.URL()+"/api/v10"+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tt := range []struct {
		path, token string
		status      int
		want        string
	}{
		{"/users/@me", tok, 200, `"id":"7"`},
		{"/users/@me/guilds", tok, 200, `"permissions":"8"`},
		{"/users/@me/guilds/42/member", tok, 200, `"roles":["9"]`},
		{"/users/@me/guilds/43/member", tok, 404, "Unknown Guild"},
		{"/users/@me", "forged", 401, "Unauthorized"},
	} {
		if st, body := get(tt.path, tt.token); st != tt.status || !strings.Contains(body, tt.want) {
			t.Errorf("GET %s: %d %s", tt.path, st, body)
		}
	}
}
