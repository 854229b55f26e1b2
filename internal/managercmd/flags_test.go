/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package managercmd

import (
	"testing"

	"github.com/fieldops/fieldops/controllers"
)

func TestSharedTargetWatchFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, controllers.DefaultSharedWatchAt},
		{[]string{"--shared-target-watch-at=40"}, 40},
		{[]string{"--shared-target-watch-at=0"}, -1}, // never share
	} {
		var f Flags
		if err := f.NewFlagSet("manager", false).Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := sharedWatchAt(f.sharedWatchAt); got != tc.want {
			t.Errorf("%v: SharedWatchAt %d, want %d", tc.args, got, tc.want)
		}
	}
}
