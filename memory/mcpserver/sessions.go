package mcpserver

import (
	"crypto/sha256"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds on the HTTP sessions of the MCP endpoint. Every `initialize`
// opens a session the SDK keeps in memory until it is closed or idle for
// SessionIdle; without a cap one token could open them faster than they
// expire (20,000 initializes held 355 MB).
const (
	// MaxSessionsPerToken is how many live sessions one token may hold.
	// An agent needs one; a desktop assistant restarting, or a few
	// agents sharing a player token, a handful. Beyond it the token's
	// least recently used session is closed: its client gets 404 and
	// initializes again, as the protocol says it should.
	MaxSessionsPerToken = 32
	// SessionIdle is how long a session lives without a request.
	SessionIdle = 30 * time.Minute
)

// tokenKeyExtra is the TokenInfo.Extra key under which the verifier puts
// the key of the token that opened the request (a hash, not the token).
const tokenKeyExtra = "glyphoxa.token"

func tokenKey(token string) string {
	h := sha256.Sum256([]byte(token))
	return string(h[:])
}

// sessionCap keeps, per token, the ids of the sessions it opened, least
// recently used first, and closes the oldest beyond max.
type sessionCap struct {
	srv *mcp.Server
	max int

	mu  sync.Mutex
	ids map[string][]string // token key -> session ids, least recently used first
}

// wrap counts the sessions h opens. It runs behind the bearer-token check,
// so every request it sees carries a token.
func (c *sessionCap) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := ""
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			key, _ = ti.Extra[tokenKeyExtra].(string)
		}
		id := r.Header.Get("Mcp-Session-Id")
		if id != "" {
			c.touch(key, id)
		}
		h.ServeHTTP(w, r)
		if id == "" && r.Method == http.MethodPost {
			// The SDK sets the header of a session it created before it
			// answers; the header map is still ours to read.
			if nid := w.Header().Get("Mcp-Session-Id"); nid != "" {
				c.add(key, nid)
			}
		}
	})
}

// touch moves id to the most recently used end of key's list.
func (c *sessionCap) touch(key, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := c.ids[key]
	if i := slices.Index(ids, id); i >= 0 {
		c.ids[key] = append(append(ids[:i:i], ids[i+1:]...), id)
	}
}

// add records a new session of key and closes key's least recently used
// sessions beyond the cap. Sessions that ended by themselves (idle, or
// closed by their client) are dropped from the list first.
func (c *sessionCap) add(key, id string) {
	live := map[string]*mcp.ServerSession{}
	for ss := range c.srv.Sessions() {
		live[ss.ID()] = ss
	}
	var evict []*mcp.ServerSession
	c.mu.Lock()
	ids := slices.DeleteFunc(append(c.ids[key], id), func(x string) bool { return live[x] == nil })
	for len(ids) > c.max {
		evict = append(evict, live[ids[0]])
		ids = ids[1:]
	}
	if len(ids) == 0 {
		delete(c.ids, key)
	} else {
		c.ids[key] = slices.Clone(ids)
	}
	c.mu.Unlock()
	for _, ss := range evict {
		ss.Close()
	}
}
