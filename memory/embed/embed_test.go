package embed

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

func TestOfflineDeterministicAndNormalised(t *testing.T) {
	for _, dims := range []int{8, 384, 1536} {
		e, err := NewOffline(dims)
		if err != nil {
			t.Fatal(err)
		}
		texts := []string{"Grimjaw forged the blade", "", "!!! ???", "the and of"}
		a, err := e.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := e.Embed(context.Background(), texts)
		for i := range texts {
			if len(a[i]) != dims {
				t.Fatalf("dims %d text %q: len %d", dims, texts[i], len(a[i]))
			}
			var n float64
			for j, x := range a[i] {
				n += float64(x) * float64(x)
				if x != b[i][j] {
					t.Fatalf("dims %d text %q: not deterministic at %d", dims, texts[i], j)
				}
			}
			if math.Abs(n-1) > 1e-5 {
				t.Errorf("dims %d text %q: norm² %v, want 1", dims, texts[i], n)
			}
		}
	}
}

func TestOfflineSimilarity(t *testing.T) {
	e, _ := NewOffline(384)
	ctx := context.Background()
	cases := []struct {
		name             string
		query, near, far string
	}{
		{"name variant", "Where is Vaelith?", "Vaeliths tower stands on the cliff", "The blacksmith sells horseshoes"},
		{"lexical overlap", "the silver dagger of the queen", "Queen Mirabel lost her silver dagger", "We camp by the river tonight"},
		{"inflection", "who forged it", "Grimjaw forges swords", "the ferryman sings"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs, err := e.Embed(ctx, []string{c.query, c.near, c.far})
			if err != nil {
				t.Fatal(err)
			}
			near, far := cosine(vs[0], vs[1]), cosine(vs[0], vs[2])
			if near <= far {
				t.Errorf("cos(query, near) = %.3f <= cos(query, far) = %.3f", near, far)
			}
		})
	}
}

func TestNewOfflineRejectsBadDimension(t *testing.T) {
	for _, d := range []int{-1, 0, 7, 16001} {
		if _, err := NewOffline(d); err == nil {
			t.Errorf("NewOffline(%d): no error", d)
		}
	}
}

func TestCheckDimensions(t *testing.T) {
	e, _ := NewOffline(384)
	if err := CheckDimensions(e, 384); err != nil {
		t.Fatal(err)
	}
	err := CheckDimensions(e, 1536)
	if !errors.Is(err, ErrDimensionMismatch) || !strings.Contains(err.Error(), "384") || !strings.Contains(err.Error(), "1536") {
		t.Fatalf("CheckDimensions(384 vs 1536) = %v", err)
	}
}

func TestWords(t *testing.T) {
	cases := map[string][]string{
		"Grimjaw's forges, the SWORDS!": {"grimjaw", "forge", "sword"},
		"Who is the ferryman?":          {"ferryman"},
		"stories of the queen":          {"story", "queen"},
		"":                              nil,
	}
	for in, want := range cases {
		got := Words(in)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}

// fakeEmbeddings is an OpenAI-compatible /v1/embeddings endpoint: it
// answers each input with a vector of dims elements derived from the text,
// and records the requests.
type fakeEmbeddings struct {
	dims int
	mu   sync.Mutex
	reqs []map[string]any
}

func (f *fakeEmbeddings) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bearer sk-test" {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`))
		return
	}
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	inputs, _ := req["input"].([]any)
	type datum struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	var data []datum
	// Answer in reverse order: clients must place vectors by index.
	for i := len(inputs) - 1; i >= 0; i-- {
		s, _ := inputs[i].(string)
		v := make([]float32, f.dims)
		v[len(s)%f.dims] = 1
		data = append(data, datum{Object: "embedding", Index: i, Embedding: v})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req["model"],
		"usage": map[string]int{"prompt_tokens": len(inputs), "total_tokens": len(inputs)}})
}

func TestOpenAIBatchesAndOrders(t *testing.T) {
	fake := &fakeEmbeddings{dims: 16}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	e, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "text-embedding-3-small",
		Dimensions: 16, RequestDimensions: true, MaxBatch: 3})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"a", "bb", "ccc", "dddd", "", "ffffff", "g"}
	vs, err := All(context.Background(), e, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range texts {
		want := len(s) % 16
		if s == "" {
			want = 1 // sent as a single space
		}
		if vs[i][want] != 1 {
			t.Errorf("vector %d (%q) is not the one for its text", i, s)
		}
	}
	if len(fake.reqs) != 3 {
		t.Fatalf("%d requests, want 3 batches of at most 3", len(fake.reqs))
	}
	if fake.reqs[0]["model"] != "text-embedding-3-small" || fake.reqs[0]["dimensions"] != float64(16) {
		t.Errorf("request = %v", fake.reqs[0])
	}
}

func TestOpenAIErrors(t *testing.T) {
	fake := &fakeEmbeddings{dims: 8}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	ctx := context.Background()

	wrongDims, _ := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "nomic-embed-text", Dimensions: 768})
	if _, err := wrongDims.Embed(ctx, []string{"x"}); !errors.Is(err, ErrDimensionMismatch) || !strings.Contains(err.Error(), "768") {
		t.Errorf("dimension mismatch: %v", err)
	}
	badKey, _ := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "nope", Model: "m", Dimensions: 8})
	if _, err := badKey.Embed(ctx, []string{"x"}); err == nil || !strings.Contains(err.Error(), "Incorrect API key") {
		t.Errorf("bad key: %v", err)
	}
	if _, err := NewOpenAI(OpenAIConfig{Dimensions: 8}); err == nil {
		t.Error("no model: no error")
	}
	if _, err := NewOpenAI(OpenAIConfig{Model: "m"}); err == nil {
		t.Error("no dimensions: no error")
	}
}

func BenchmarkOfflineEmbed(b *testing.B) {
	e, _ := NewOffline(384)
	text := strings.Repeat("Grimjaw the blacksmith forged a silver blade for Queen Mirabel. ", 8)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Embed(ctx, []string{text}); err != nil {
			b.Fatal(err)
		}
	}
}

// German words: stop words dropped, endings trimmed, umlauts folded, so
// that the forms a table speaks share a feature; English stays the
// default for every other language.
func TestWordsInGerman(t *testing.T) {
	cases := []struct {
		lang, a, b string
		same       bool
	}{
		{"de", "Schlüssel", "Schlüsseln", true},
		{"de", "Schlüssel", "Schlussel", true},
		{"de", "den kupfernen Ring", "der kupferne Ring", true},
		{"de", "kupfernem", "kupferne", true},
		{"de", "versteckt", "verstecken", true},
		{"de-AT", "Zwerges", "Zwerge", true},
		{"german", "Ketten", "Kette", true},
		{"de", "Kette", "Kater", false},
		{"en", "forged", "forging", true},
		{"fr", "forged", "forging", true}, // no French rules: English's
	}
	for _, tc := range cases {
		a, b := strings.Join(WordsIn(tc.lang, tc.a), " "), strings.Join(WordsIn(tc.lang, tc.b), " ")
		if (a == b) != tc.same || a == "" {
			t.Errorf("%s: %q → %q, %q → %q; same %v, want %v", tc.lang, tc.a, a, tc.b, b, a == b, tc.same)
		}
	}
	if got := WordsIn("de", "Wann hat die Wache den Dolch gesehen?"); strings.Join(got, " ") != "wach dolch seh" {
		t.Errorf("German stop and question words: %v", got)
	}
	// "die" is a German article, an English verb.
	if got := WordsIn("en", "Did the baron die?"); !slices.Contains(got, "die") {
		t.Errorf("English lost the verb die: %v", got)
	}
}

// ForLanguage gives the offline embedder the campaign's words, leaves an
// embedder without languages as it is, and keeps the dimension.
func TestForLanguage(t *testing.T) {
	ctx := context.Background()
	o, err := NewOffline(64)
	if err != nil {
		t.Fatal(err)
	}
	de := ForLanguage(o, "de")
	if de.Dimensions() != 64 {
		t.Fatalf("dimension %d", de.Dimensions())
	}
	vs, err := de.Embed(ctx, []string{"Ich verstecke den Schlüssel.", "Du versteckst die Schlüssel."})
	if err != nil {
		t.Fatal(err)
	}
	en, err := o.Embed(ctx, []string{"Ich verstecke den Schlüssel.", "Du versteckst die Schlüssel."})
	if err != nil {
		t.Fatal(err)
	}
	if cd, ce := cosine(vs[0], vs[1]), cosine(en[0], en[1]); cd <= ce || cd < 0.9 {
		t.Errorf("German forms of one sentence: cosine %.2f in German, %.2f in English; want German higher and >= 0.9", cd, ce)
	}
	var plain Embedder = stubEmbedder{}
	if ForLanguage(plain, "de") != plain {
		t.Error("an embedder without languages was replaced")
	}
}

type stubEmbedder struct{}

func (stubEmbedder) Embed(_ context.Context, ts []string) ([][]float32, error) {
	return make([][]float32, len(ts)), nil
}
func (stubEmbedder) Dimensions() int { return 8 }
