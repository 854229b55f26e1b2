/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// A wake-up due after the manager stopped (its context done, nothing
// reading the wake channel any more) returns instead of blocking its
// goroutine; before that, it is delivered, naming the patch.
func TestExpiryWakeNeverBlocksAfterStop(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "pin"}

	// Nobody reads: with the context already done, the send returns.
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	if sendWake(stopped, make(chan event.GenericEvent), key) {
		t.Fatal("sendWake sent on a channel nobody reads")
	}

	// A send waiting while the manager runs returns when it stops
	// (whether it was blocked before stop or starts after it).
	running, stop := context.WithCancel(context.Background())
	returned := make(chan bool)
	go func() { returned <- sendWake(running, make(chan event.GenericEvent), key) }()
	stop()
	if <-returned {
		t.Fatal("sendWake reports a send nobody read")
	}

	// A timer armed in a running manager delivers the patch's event.
	var timers expiryTimers
	wake := make(chan event.GenericEvent)
	timers.arm(context.Background(), key, 0, wake)
	ev := <-wake
	if ev.Object.GetNamespace() != key.Namespace || ev.Object.GetName() != key.Name {
		t.Fatalf("woke %s/%s, want %s", ev.Object.GetNamespace(), ev.Object.GetName(), key)
	}

}
