// Package httpcheck refuses HTTP requests carrying text that no handler
// can store or search: a NUL byte or invalid UTF-8 in the path, a query
// parameter or a form field. PostgreSQL refuses both in text (SQLSTATE
// 22021), so without this check they surface as a 500 from deep inside a
// handler; with it the client gets a 400 naming the parameter.
package httpcheck

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Text reports whether s is valid UTF-8 without a NUL byte; the error
// names what is wrong with it, never its content.
func Text(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("is not valid UTF-8")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return errors.New("holds a NUL byte")
	}
	return nil
}

// Request checks r's path and query parameters (names and values). The
// error names the part or parameter at fault. A query string that does not
// parse (a bad %-escape) is refused too.
func Request(r *http.Request) error {
	if err := Text(r.URL.Path); err != nil {
		return fmt.Errorf("the request path %v", err)
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return fmt.Errorf("the query string does not parse: %v", err)
	}
	return Values("query parameter", q)
}

// Values checks the names and values of v; what says what they are
// ("form field", "query parameter") in the error.
func Values(what string, v url.Values) error {
	for k, vs := range v {
		if err := Text(k); err != nil {
			return fmt.Errorf("a %s name %v", what, err)
		}
		for _, x := range vs {
			if err := Text(x); err != nil {
				return fmt.Errorf("the %s %q %v", what, k, err)
			}
		}
	}
	return nil
}

// Handler refuses, with 400 and a plain-text message, a request whose
// path or query parameters [Request] refuses; it passes the rest to next.
func Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := Request(r); err != nil {
			http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
