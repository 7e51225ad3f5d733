package interop_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// djsPeer is a running testdata/djs-peer.js.
type djsPeer struct {
	t   testing.TB
	in  *json.Encoder
	out *bufio.Scanner
}

// djsState is what the peer reports about its connection.
type djsState struct {
	Error       string            `json:"error"`
	Status      string            `json:"status"`
	Networking  int               `json:"networking"`
	Ready       bool              `json:"ready"`
	Epoch       string            `json:"epoch"`
	PrivacyCode string            `json:"privacyCode"`
	DAVEVersion int               `json:"daveVersion"`
	Transitions int               `json:"transitions"`
	Mode        string            `json:"mode"`
	Frames      []string          `json:"frames"`
	Payloads    []json.RawMessage `json:"payloads"`
	// Packets, Lost, Seqs and KernelDrops account for the RTP packets the
	// receiver got from the user since the last received call: how many,
	// those it did not hand out (with why), their sequence numbers, and
	// the datagrams the kernel dropped for the peer's UDP socket.
	Packets     int               `json:"packets"`
	Lost        []json.RawMessage `json:"lost"`
	Seqs        []int             `json:"seqs"`
	KernelDrops int               `json:"kernelDrops"`
}

// startDJS runs the discord.js peer for the test's duration, trusting ca.
// It skips only when node is missing and CI is unset.
func startDJS(t *testing.T, caFile string) *djsPeer {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node not found: %v", err)
		}
		t.Skipf("node not found: %v", err)
	}
	root := moduleRoot(t)
	modules := filepath.Join(root, ".cache", "node-peers", "node_modules")
	for _, pkg := range []string{"@discordjs/voice", "@snazzah/davey", "@noble/ciphers"} {
		if _, err := os.Stat(filepath.Join(modules, pkg, "package.json")); err != nil {
			t.Fatalf("%s is not installed in %s (scripts/testdeps.sh installs it): %v", pkg, modules, err)
		}
	}
	cmd := exec.Command(node, filepath.Join(root, "voice", "interop", "testdata", "djs-peer.js"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "NODE_EXTRA_CA_CERTS="+caFile, "NODE_NO_WARNINGS=1")
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
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("discord.js peer exited: %v", err)
			}
		case <-time.After(hangGuard):
			cmd.Process.Kill()
			<-done
			t.Error("discord.js peer did not exit")
		}
	})
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	return &djsPeer{t: t, in: json.NewEncoder(stdin), out: sc}
}

// call sends a command and returns the reply; a refusal fails the test.
func (p *djsPeer) call(cmd string, args map[string]any) djsState {
	p.t.Helper()
	m := map[string]any{"cmd": cmd}
	for k, v := range args {
		m[k] = v
	}
	if err := p.in.Encode(m); err != nil {
		p.t.Fatalf("writing to the discord.js peer: %v", err)
	}
	if !p.out.Scan() {
		p.t.Fatalf("the discord.js peer closed: %v", p.out.Err())
	}
	var r djsState
	if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
		p.t.Fatalf("discord.js reply %.200q: %v", p.out.Text(), err)
	}
	if r.Error != "" {
		p.t.Fatalf("discord.js %s: %s", cmd, r.Error)
	}
	return r
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// tlsFront is a TLS listener on loopback that forwards each connection to
// a plain TCP address, as a TLS-terminating proxy before the fake voice
// server.
type tlsFront struct {
	l      net.Listener
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

// newTLSFront generates a self-signed certificate for 127.0.0.1, writes
// it to a PEM file for the peer to trust, and forwards to target.
func newTLSFront(t *testing.T, target string) (f *tlsFront, caFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "glyphoxa interop test voice server"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(t.TempDir(), "voice-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	f = &tlsFront{l: l, target: target, conns: map[net.Conn]bool{}}
	f.wg.Add(1)
	go f.serve()
	t.Cleanup(f.close)
	return f, caFile
}

// Endpoint is the front as a VOICE_SERVER_UPDATE names it: host:port.
func (f *tlsFront) Endpoint() string { return f.l.Addr().String() }

func (f *tlsFront) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		c.Close()
		return false
	}
	f.conns[c] = true
	return true
}

func (f *tlsFront) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	c.Close()
}

func (f *tlsFront) serve() {
	defer f.wg.Done()
	for {
		c, err := f.l.Accept()
		if err != nil {
			return
		}
		if !f.track(c) {
			continue
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.untrack(c)
			b, err := net.Dial("tcp", f.target)
			if err != nil {
				return
			}
			if !f.track(b) {
				return
			}
			defer f.untrack(b)
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				io.Copy(dst, src)
				// Either side ending ends both, as a proxy does.
				dst.Close()
				src.Close()
				done <- struct{}{}
			}
			go pipe(b, c)
			go pipe(c, b)
			<-done
			<-done
		}()
	}
}

func (f *tlsFront) close() {
	f.l.Close()
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func hostPort(endpoint string) string {
	return strings.TrimSuffix(strings.TrimPrefix(endpoint, "ws://"), "/")
}
