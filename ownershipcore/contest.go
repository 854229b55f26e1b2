/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"strings"
	"sync"
	"time"
)

// Contest backoff: the first repair of a field another manager changed is
// immediate; when the same manager takes our fields again within
// contestWindow, each further repair waits ContestBase·2^(n-1), up to
// contestMax. A manager retaking a field every second thus sees repairs at
// 0 s, 5 s, 15 s, 35 s, 75 s, …: bounded writes, never a loop. A contest
// ends when a repair holds for ContestBase (Contests.Settle).
const (
	ContestBase   = 5 * time.Second
	contestMax    = 10 * time.Minute
	contestWindow = 15 * time.Minute
)

// Contests remembers, per key (one object a fieldops object writes to, for
// example "<fieldops UID>/<target key>"), which field manager last took
// its fields back and how often, and decides when the next repair may be
// written. Memory only: a restart costs at most one write per key. Times
// are passed in, so callers and tests choose the clock. It is safe for
// concurrent use.
type Contests struct {
	base time.Duration // the backoff unit (Base)
	mu   sync.Mutex
	m    map[string]*contest
}

type contest struct {
	manager string
	repairs int
	last    time.Time
}

// newContests returns an empty tracker with the backoff unit ContestBase.
func newContests() *Contests { return NewContestsBase(0) }

// NewContestsBase returns an empty tracker whose backoff unit is base
// instead of ContestBase (0: ContestBase). contestMax and contestWindow
// stay as they are.
func NewContestsBase(base time.Duration) *Contests {
	if base <= 0 {
		base = ContestBase
	}
	return &Contests{base: base, m: map[string]*contest{}}
}

// Base is the backoff unit: the first backed-off repair waits this long,
// and a repair holds once it is this old.
func (c *Contests) Base() time.Duration { return c.base }

// Next says when a repair of drift caused by manager may be written: the
// zero time means now. It records nothing.
func (c *Contests) Next(key, manager string, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct, ok := c.m[key]
	if !ok || ct.manager != manager || now.Sub(ct.last) > contestWindow || ct.repairs == 0 {
		return time.Time{}
	}
	delay := c.base << (ct.repairs - 1)
	if delay > contestMax || delay <= 0 {
		delay = contestMax
	}
	if at := ct.last.Add(delay); at.After(now) {
		return at
	}
	return time.Time{}
}

// Repaired records a repair of drift caused by manager and returns how many
// repairs in a row that manager has caused (2 or more is a contest).
func (c *Contests) Repaired(key, manager string, now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct, ok := c.m[key]
	if !ok || ct.manager != manager || now.Sub(ct.last) > contestWindow {
		ct = &contest{manager: manager}
		c.m[key] = ct
	}
	ct.repairs++
	ct.last = now
	return ct.repairs
}

// Current returns the contesting manager of key while the contest lasts
// (two or more repairs, the last within contestWindow), else "".
func (c *Contests) Current(key string, now time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ct, ok := c.m[key]; ok && ct.repairs >= 2 && now.Sub(ct.last) <= contestWindow {
		return ct.manager
	}
	return ""
}

// Settle is called when key's fields hold (no drift): once the last repair
// is at least Base old, the contest is over and forgotten, and
// Settle returns 0. Otherwise it returns how long until the repair counts
// as held, so the caller can look again then; 0 also when there is no
// contest.
func (c *Contests) Settle(key string, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct, ok := c.m[key]
	if !ok {
		return 0
	}
	if held := now.Sub(ct.last); held < c.base {
		return c.base - held
	}
	delete(c.m, key)
	return 0
}

// Forget drops key.
func (c *Contests) Forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// ForgetPrefix drops every key that starts with prefix: the contests of
// one fieldops object over all its targets ("<UID>/").
func (c *Contests) ForgetPrefix(prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if strings.HasPrefix(k, prefix) {
			delete(c.m, k)
		}
	}
}
