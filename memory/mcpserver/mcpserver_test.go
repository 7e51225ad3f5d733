package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/mcpserver"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// nodePeers finds the installed Node test peers (scripts/testdeps.sh puts
// them in .cache/node-peers). Without them the test fails in CI and skips
// elsewhere.
func nodePeers(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GLYPHOXA_NODE_PEERS")
	if dir == "" {
		wd, _ := os.Getwd()
		for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(d, ".cache", "node-peers")
				break
			}
		}
	}
	_, errNode := exec.LookPath("node")
	_, errSDK := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk"))
	if errNode != nil || errSDK != nil {
		msg := "the MCP client test needs node and @modelcontextprotocol/sdk: run scripts/testdeps.sh (make test does)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

type callResult struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

type clientRun struct {
	Tools   []string     `json:"tools"`
	Results []callResult `json:"results"`
}

type call struct {
	Tool string `json:"tool"`
	Args any    `json:"args,omitempty"`
}

// clientHangGuard bounds one run of the TypeScript SDK client.
const clientHangGuard = 10 * time.Minute

// tsClients is the one Node.js process (testdata/mcp-client.mjs) that runs
// every TypeScript SDK client of this test binary: started on first use,
// stopped by TestMain. Loading the SDK was most of the CPU time of each of
// the 14 runs when every run started a process of its own.
var tsClients clientProcess

func TestMain(m *testing.M) {
	code := m.Run()
	if err := tsClients.stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// clientReply is one line of the client process's output.
type clientReply struct {
	ID      int          `json:"id"`
	Tools   []string     `json:"tools"`
	Results []callResult `json:"results"`
	Error   string       `json:"error"`
}

// clientProcess runs the TypeScript SDK client process and matches its
// replies to the runs waiting for them. Its reader goroutine ends when the
// process's output does (stop closes its input and waits for both).
type clientProcess struct {
	once   sync.Once
	err    error
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr lockedBuffer
	done   chan struct{} // closed when the process's output ended

	mu      sync.Mutex
	next    int
	waiting map[int]chan clientReply
}

// lockedBuffer is the process's standard error, written by exec's copier
// and read by failing runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start starts the process once, with the Node peers in peers.
func (c *clientProcess) start(peers string) error {
	c.once.Do(func() {
		cmd := exec.Command("node", "testdata/mcp-client.mjs")
		cmd.Env = append(os.Environ(), "NODE_PEERS="+peers)
		cmd.Stderr = &c.stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			c.err = err
			return
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			c.err = err
			return
		}
		if err := cmd.Start(); err != nil {
			c.err = fmt.Errorf("starting the TypeScript SDK client: %w", err)
			return
		}
		c.cmd, c.stdin, c.done, c.waiting = cmd, stdin, make(chan struct{}), map[int]chan clientReply{}
		go c.read(stdout)
	})
	return c.err
}

// read hands each reply to the run waiting for it.
func (c *clientProcess) read(stdout io.Reader) {
	defer close(c.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var r clientReply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			fmt.Fprintf(os.Stderr, "the TypeScript SDK client wrote %q: %v\n", sc.Text(), err)
			continue
		}
		c.mu.Lock()
		ch := c.waiting[r.ID]
		delete(c.waiting, r.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

// run sends one request and waits for its reply.
func (c *clientProcess) run(name, mode string, args []string, calls []call) (clientReply, error) {
	ch := make(chan clientReply, 1)
	c.mu.Lock()
	c.next++
	id := c.next
	c.waiting[id] = ch
	line, _ := json.Marshal(map[string]any{"id": id, "name": name, "mode": mode, "args": args, "calls": calls})
	_, err := c.stdin.Write(append(line, '\n'))
	if err != nil {
		delete(c.waiting, id)
	}
	c.mu.Unlock()
	if err != nil {
		return clientReply{}, fmt.Errorf("sending a run to the TypeScript SDK client: %w: %s", err, c.stderr.String())
	}
	guard := time.NewTimer(clientHangGuard)
	defer guard.Stop()
	select {
	case r := <-ch:
		return r, nil
	case <-c.done:
		return clientReply{}, fmt.Errorf("the TypeScript SDK client exited: %s", c.stderr.String())
	case <-guard.C:
		return clientReply{}, fmt.Errorf("no answer from the TypeScript SDK client in %s (a hang guard): %s", clientHangGuard, c.stderr.String())
	}
}

// stop closes the process's input and waits for it to finish the runs
// under way and exit.
func (c *clientProcess) stop() error {
	if c.cmd == nil {
		return nil
	}
	c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(clientHangGuard):
		c.cmd.Process.Kill()
	}
	if err := c.cmd.Wait(); err != nil {
		return fmt.Errorf("the TypeScript SDK client: %w: %s", err, c.stderr.String())
	}
	return nil
}

// runClient runs the TypeScript SDK client (a client of its own, named
// name, in the shared process) with calls and returns what it got back.
// args are the transport: "http", url, token.
func runClient(t *testing.T, peers, name string, calls []call, args ...string) (clientRun, error) {
	t.Helper()
	if len(args) == 0 {
		t.Fatal("runClient needs a transport")
	}
	if err := tsClients.start(peers); err != nil {
		t.Fatal(err)
	}
	r, err := tsClients.run(name, args[0], args[1:], calls)
	if err != nil {
		t.Fatal(err)
	}
	if r.Error != "" {
		return clientRun{}, errors.New(r.Error)
	}
	if len(r.Results) != len(calls) {
		t.Fatalf("%d results for %d calls", len(r.Results), len(calls))
	}
	return clientRun{Tools: r.Tools, Results: r.Results}, nil
}

func sample(t *testing.T) *postgres.Store {
	t.Helper()
	s, _ := pgtest.NewStore(t, 16)
	pgtest.Import(t, s, "../../testdata/campaigns/ironhold-saga.yaml")
	return s
}

func TestTypeScriptClientOverHTTP(t *testing.T) {
	t.Parallel()
	peers := nodePeers(t)
	store := sample(t)
	url := serveMCP(t, mcpserver.Config{Door: pgtest.Door(t, store), Campaign: "ironhold-saga"},
		mcpserver.Tokens{Player: []string{"player-token-0123456789"}, DM: []string{"dm-token-0123456789"}})

	if _, err := runClient(t, peers, "intruder", []call{{Tool: "kg_ping"}}, "http", url, "wrong"); err == nil {
		t.Fatal("a wrong token connected")
	}

	player, err := runClient(t, peers, "player-agent", []call{
		{Tool: "kg_ping"},
		{Tool: "read_graph", Args: map[string]any{"name": "grim"}},
		{Tool: "put_edge", Args: map[string]any{"source": "grimjaw", "type": "hates", "target": "vexa", "confidence": 0.95}},
		{Tool: "put_node", Args: map[string]any{"type": "npc", "name": "Old Mag", "attributes": map[string]any{"occupation": "ferrywoman"}}},
		{Tool: "search_sessions", Args: map[string]any{"query": "shipment"}},
		{Tool: "ask", Args: map[string]any{"question": "who stole the steel?"}},
		{Tool: "resolve_proposal", Args: map[string]any{"id": 1, "accept": true}},
		{Tool: "sync", Args: map[string]any{"cursor": 0}},
	}, "http", url, "player-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	wantTools := "[ask delete_edge kg_delete_edge kg_delete_node kg_ping kg_put_edge kg_put_node kg_read kg_recall kg_register_session kg_sync put_edge put_node read_graph recall_node resolve_proposal search_sessions sync]"
	if fmt.Sprint(player.Tools) != wantTools {
		t.Fatalf("tools %v", player.Tools)
	}
	r := player.Results
	if !r[0].OK || !strings.Contains(string(r[0].Result), `"your_role":"player"`) || strings.Contains(string(r[0].Result), `"connected_clients"`) {
		t.Fatalf("ping %+v", r[0])
	}
	graph := string(r[1].Result)
	if !r[1].OK || !strings.Contains(graph, `"name":"Grimjaw"`) || strings.Contains(graph, "hooded stranger") || strings.Contains(graph, "FORGED") {
		t.Fatalf("a player's read_graph: %+v", r[1])
	}
	if !r[2].OK || !strings.Contains(string(r[2].Result), `"result":"proposed"`) {
		t.Fatalf("a player's put_edge must be a proposal: %+v", r[2])
	}
	if !r[3].OK || !strings.Contains(string(r[3].Result), `"proposal_id"`) {
		t.Fatalf("a player's put_node must be a proposal: %+v", r[3])
	}
	if !r[4].OK || !strings.Contains(string(r[4].Result), "lost a shipment") {
		t.Fatalf("search_sessions: %+v", r[4])
	}
	if r[5].OK || !strings.Contains(r[5].Error, "not available") {
		t.Fatalf("ask without retrieval: %+v", r[5])
	}
	if r[6].OK || !strings.Contains(r[6].Error, "only the DM") {
		t.Fatalf("a player resolved a proposal: %+v", r[6])
	}
	var sync struct {
		Changes []struct{ Actor string } `json:"changes"`
		Cursor  int64                    `json:"cursor"`
	}
	json.Unmarshal(r[7].Result, &sync)
	for _, c := range sync.Changes {
		if c.Actor == "mcp:player:player-agent" {
			t.Fatalf("sync returned the caller's own write: %+v", c)
		}
	}
	if sync.Cursor == 0 {
		t.Fatalf("sync cursor %d", sync.Cursor)
	}
	ctx := context.Background()
	camp := pgtest.Campaign(t, store, "ironhold-saga")
	if _, err := camp.Graph().Entity(ctx, "old-mag"); err == nil {
		t.Fatal("a player's put_node changed canon")
	}

	dm, err := runClient(t, peers, "dm-agent", []call{
		{Tool: "read_graph", Args: map[string]any{"name": "grim"}},
		{Tool: "resolve_proposal", Args: map[string]any{"id": 1, "accept": true}},
		{Tool: "kg_delete_node", Args: map[string]any{"level": "campaign", "id": "duskwood"}},
		{Tool: "read_graph", Args: map[string]any{"name": "dusk"}},
		{Tool: "recall_node", Args: map[string]any{"id": "duskwood"}},
		{Tool: "sync", Args: map[string]any{"cursor": 0}},
	}, "http", url, "dm-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	d := dm.Results
	if !d[0].OK || !strings.Contains(string(d[0].Result), "hooded stranger") || !strings.Contains(string(d[0].Result), `"kind":"put_node"`) {
		t.Fatalf("the DM's read_graph shows secrets and proposals: %+v", d[0])
	}
	if !d[1].OK || !strings.Contains(string(d[1].Result), `"result":"accepted"`) {
		t.Fatalf("resolve: %+v", d[1])
	}
	if e, err := camp.Graph().Entity(ctx, "old-mag"); err != nil || e.Attributes["occupation"] != "ferrywoman" {
		t.Fatalf("the accepted proposal was not applied: %+v %v", e, err)
	}
	if !d[2].OK || !strings.Contains(string(d[2].Result), `"result":"applied"`) {
		t.Fatalf("delete_node: %+v", d[2])
	}
	var dusk struct {
		Entities []struct{ ID string }       `json:"entities"`
		Archived []struct{ Kind, ID string } `json:"archived"`
	}
	json.Unmarshal(d[3].Result, &dusk)
	if len(dusk.Entities) != 0 || len(dusk.Archived) == 0 || dusk.Archived[0].ID != "duskwood" || dusk.Archived[0].Kind != "entity" {
		t.Fatalf("an archived node must show as a trace: %s", d[3].Result)
	}
	if !d[4].OK || !strings.Contains(string(d[4].Result), `"archived":true`) {
		t.Fatalf("recall_node: %+v", d[4])
	}
	var dsync struct {
		Changes []struct{ Actor string } `json:"changes"`
	}
	json.Unmarshal(d[5].Result, &dsync)
	var sawPlayer bool
	for _, c := range dsync.Changes {
		if c.Actor == "mcp:dm:dm-agent" {
			t.Fatalf("the DM agent's sync returned its own write")
		}
		sawPlayer = sawPlayer || c.Actor == "mcp:player:player-agent"
	}
	if !sawPlayer {
		t.Fatalf("the DM agent's sync misses the player's writes: %s", d[5].Result)
	}
}

// serveMCP serves an MCP server of cfg with tokens on a test HTTP server,
// closed when the test ends (after the clients its test registered later),
// and returns the URL of its MCP endpoint.
func serveMCP(t *testing.T, cfg mcpserver.Config, tokens mcpserver.Tokens) string {
	t.Helper()
	srv, err := mcpserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hh, err := srv.HTTPHandler(tokens)
	if err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(hh)
	t.Cleanup(h.Close)
	return h.URL + "/mcp"
}
