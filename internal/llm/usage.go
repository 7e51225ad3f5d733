package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
)

// maxUsageBody bounds the JSON response read to find its token usage.
const maxUsageBody = 8 << 20

// usageTransport reports the token usage of the JSON (not streamed)
// responses of an OpenAI-compatible API, for a Client built elsewhere
// without OnUsage (the correction pass builds its own from its options).
// A Client's own calls are counted by Stream, Complete and Embed.
type usageTransport struct {
	base    http.RoundTripper
	onUsage func(Usage)
}

func (t usageTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxUsageBody+1))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if len(body) > maxUsageBody {
		return resp, nil
	}
	var u struct {
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(body, &u) == nil && u.Usage != nil {
		t.onUsage(Usage{PromptTokens: u.Usage.PromptTokens, CompletionTokens: u.Usage.CompletionTokens})
	}
	return resp, nil
}

// CountingHTTPClient returns an HTTP client, on base (http.DefaultClient
// when nil), that reports the token usage of every JSON response of an
// OpenAI-compatible API to onUsage. Give it to a Client made without
// OnUsage (the correction pass's) so that the token counter counts every
// call once.
func CountingHTTPClient(base *http.Client, onUsage func(Usage)) *http.Client {
	if base == nil {
		base = http.DefaultClient
	}
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = usageTransport{base: rt, onUsage: onUsage}
	return &c
}
