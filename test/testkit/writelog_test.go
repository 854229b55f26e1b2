/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package testkit

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

type tagKey struct{}

func TestWriteLog(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPatch && string(b) != "{}" {
			w.WriteHeader(http.StatusBadRequest) // the body did not reach the server
			return
		}
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusConflict)
		}
	}))
	defer srv.Close()
	l := &WriteLog{Tag: func(ctx context.Context) string { s, _ := ctx.Value(tagKey{}).(string); return s }}
	cfg := &rest.Config{}
	l.Wrap(cfg)
	rt := cfg.WrapTransport(http.DefaultTransport)
	ctx := context.WithValue(context.Background(), tagKey{}, "r1")
	send := func(method, query string, body io.Reader) {
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+"/api/v1/namespaces/ns/configmaps/c"+query, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/apply-patch+yaml")
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	send(http.MethodGet, "", nil)
	n := l.Len()
	send(http.MethodPatch, "?fieldManager=m&dryRun=All", strings.NewReader("{}"))
	send(http.MethodPatch, "", io.NopCloser(strings.NewReader("{}"))) // no GetBody
	send(http.MethodDelete, "", nil)
	got := l.From(n)
	if len(got) != 3 || n != 0 {
		t.Fatalf("logged %d writes from %d, want 3 from 0: %+v", len(got), n, got)
	}
	first := got[0]
	if first.FieldManager != "m" || !first.DryRun || string(first.Body) != "{}" || first.Tag != "r1" || !first.Succeeded() ||
		first.ContentType != "application/apply-patch+yaml" || first.Path != "/api/v1/namespaces/ns/configmaps/c" {
		t.Errorf("first write: %+v", first)
	}
	if string(got[1].Body) != "{}" || !got[1].Succeeded() {
		t.Errorf("a body without GetBody: %+v", got[1])
	}
	if got[2].Status != http.StatusConflict || got[2].Succeeded() {
		t.Errorf("a refused write: %+v", got[2])
	}
	if l.From(10) != nil {
		t.Errorf("From past the end is not empty")
	}
}
