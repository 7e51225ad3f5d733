// Package daveypeer runs @snazzah/davey (Rust/OpenMLS, the DAVE
// implementation discord.js uses) as an independent peer for interop tests.
// It drives voice/dave/testdata/davey-peer.js over newline-delimited JSON on
// the program's standard input and output; `make test` installs the pinned
// package into .cache/node-peers (scripts/testdeps.sh).
package daveypeer

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Peer is a running davey peer.
type Peer struct {
	t   testing.TB
	in  *json.Encoder
	out *bufio.Scanner
}

// Reply is the peer's answer to a command.
type Reply struct {
	Error       string `json:"error"`
	Hex         string `json:"hex"`
	Commit      string `json:"commit"`
	Welcome     string `json:"welcome"`
	Epoch       int64  `json:"epoch"`
	Leaf        int64  `json:"leaf"`
	Ready       bool   `json:"ready"`
	PrivacyCode string `json:"privacyCode"`
	Code        string `json:"code"`
}

// Error is a command the peer refused.
type Error struct{ Msg string }

func (e *Error) Error() string { return "davey: " + e.Msg }

// Start runs a peer for the test's duration. It skips only when Node is
// missing and CI is unset; in CI a missing Node or davey install fails.
func Start(t testing.TB) *Peer {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node not found: %v", err)
		}
		t.Skipf("node not found: %v", err)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	modules := filepath.Join(root, ".cache", "node-peers", "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "@snazzah", "davey")); err != nil {
		t.Fatalf("@snazzah/davey is not installed in %s (scripts/testdeps.sh installs it): %v", modules, err)
	}
	cmd := exec.Command(node, filepath.Join(root, "voice", "dave", "testdata", "davey-peer.js"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("davey peer exited: %v", err)
		}
	})
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	return &Peer{t: t, in: json.NewEncoder(stdin), out: sc}
}

// moduleRoot is the directory of the go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Call sends a command and returns the reply; a command the peer refused
// is an *Error. Broken pipes fail the test.
func (p *Peer) Call(cmd map[string]any) (Reply, error) {
	p.t.Helper()
	if err := p.in.Encode(cmd); err != nil {
		p.t.Fatalf("writing to davey: %v", err)
	}
	if !p.out.Scan() {
		p.t.Fatalf("davey peer closed: %v", p.out.Err())
	}
	var r Reply
	if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
		p.t.Fatalf("davey reply %q: %v", p.out.Text(), err)
	}
	if r.Error != "" {
		return r, &Error{r.Error}
	}
	return r, nil
}

// Must is Call that fails the test on a refusal.
func (p *Peer) Must(cmd map[string]any) Reply {
	p.t.Helper()
	r, err := p.Call(cmd)
	if err != nil {
		p.t.Fatalf("%v: %v", cmd["cmd"], fmt.Sprint(err))
	}
	return r
}

// ReportTo makes the peer report failures to t from now on, so that one
// peer can serve subtests run one after another.
func (p *Peer) ReportTo(t testing.TB) { p.t = t }
