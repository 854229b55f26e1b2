/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package testkit

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"

	"k8s.io/client-go/rest"
)

// LoggedWrite is one write request (every method but GET) a WriteLog
// kept, in the order it was sent.
type LoggedWrite struct {
	Method string
	// Path is the URL path ("/api/v1/namespaces/ns/configmaps/name").
	Path string
	// ContentType is the request's content type: a PATCH's patch type
	// (application/apply-patch+yaml, application/json-patch+json,
	// application/merge-patch+json, ...).
	ContentType string
	// FieldManager is the fieldManager query parameter ("" when none).
	FieldManager string
	// DryRun: the request asked for a dry run (nothing was written).
	DryRun bool
	// Body is the request's body.
	Body []byte
	// Status is the answer's status code; 0 when no answer came.
	Status int
	// Tag is what WriteLog.Tag said of the request's context.
	Tag string
}

// Succeeded reports whether the apiserver answered w with a success
// (and so, unless it was a dry run, wrote).
func (w LoggedWrite) Succeeded() bool { return w.Status >= 200 && w.Status < 300 }

// WriteLog keeps the write requests sent through it, in order, with their
// answers' status codes, so that a test can take the writes made from a
// point on (Len, From). Install it with Wrap on the manager's rest.Config.
type WriteLog struct {
	// Tag, when set, labels each write with what it returns for the
	// request's context (a reconcile's ID, say).
	Tag func(ctx context.Context) string

	next   http.RoundTripper
	mu     sync.Mutex
	writes []LoggedWrite
}

// Wrap makes cfg's transport log writes through l.
func (l *WriteLog) Wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { l.next = rt; return l })
}

// RoundTrip logs r when it is a write and sends it on.
func (l *WriteLog) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		return l.next.RoundTrip(r)
	}
	w := LoggedWrite{Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"),
		FieldManager: r.URL.Query().Get("fieldManager"), DryRun: r.URL.Query().Has("dryRun")}
	w.Body, r = requestBody(r)
	if l.Tag != nil {
		w.Tag = l.Tag(r.Context())
	}
	l.mu.Lock()
	i := len(l.writes)
	l.writes = append(l.writes, w)
	l.mu.Unlock()
	resp, err := l.next.RoundTrip(r)
	if err == nil {
		l.mu.Lock()
		l.writes[i].Status = resp.StatusCode
		l.mu.Unlock()
	}
	return resp, err
}

// requestBody returns a copy of r's body and r with a body still to read.
func requestBody(r *http.Request) ([]byte, *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, r
	}
	if r.GetBody != nil {
		if rc, err := r.GetBody(); err == nil {
			defer rc.Close()
			if b, err := io.ReadAll(rc); err == nil {
				return b, r
			}
		}
	}
	b, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return nil, r
	}
	return b, r
}

// Len is how many writes l kept so far: From(Len()) later returns the
// writes sent in between.
func (l *WriteLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.writes)
}

// From returns the writes from the n-th on (0: all), in the order sent.
func (l *WriteLog) From(n int) []LoggedWrite {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n >= len(l.writes) {
		return nil
	}
	return append([]LoggedWrite(nil), l.writes[n:]...)
}
