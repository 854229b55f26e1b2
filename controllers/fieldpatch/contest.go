package fieldpatch

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Contest backoff: the first repair of a field another manager changed is
// immediate; when the same manager takes patched fields again within
// contestWindow, each further repair waits contestBase·2^(n-1), up to
// contestMax. A manager retaking a field every second thus sees repairs at
// 0 s, 5 s, 15 s, 35 s, 75 s, …: bounded writes, never a loop.
const (
	contestBase   = 5 * time.Second
	contestMax    = 10 * time.Minute
	contestWindow = 15 * time.Minute
)

// contests remembers, per FieldPatch UID, which manager last took its
// fields and how often. Memory only: a restart costs at most one write.
type contests struct {
	mu sync.Mutex
	m  map[types.UID]*contest
}

type contest struct {
	manager string
	repairs int
	last    time.Time
}

func newContests() *contests { return &contests{m: map[types.UID]*contest{}} }

// next says when a repair of drift caused by manager may be written: zero
// means now. It records nothing.
func (c *contests) next(uid types.UID, manager string, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct, ok := c.m[uid]
	if !ok || ct.manager != manager || now.Sub(ct.last) > contestWindow || ct.repairs == 0 {
		return time.Time{}
	}
	delay := contestBase << (ct.repairs - 1)
	if delay > contestMax || delay <= 0 {
		delay = contestMax
	}
	if at := ct.last.Add(delay); at.After(now) {
		return at
	}
	return time.Time{}
}

// repaired records a repair of drift caused by manager and returns how many
// repairs in a row that manager has caused.
func (c *contests) repaired(uid types.UID, manager string, now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct, ok := c.m[uid]
	if !ok || ct.manager != manager || now.Sub(ct.last) > contestWindow {
		ct = &contest{manager: manager}
		c.m[uid] = ct
	}
	ct.repairs++
	ct.last = now
	return ct.repairs
}

// current returns the contesting manager of uid while the contest lasts.
func (c *contests) current(uid types.UID, now time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ct, ok := c.m[uid]; ok && ct.repairs >= 2 && now.Sub(ct.last) <= contestWindow {
		return ct.manager
	}
	return ""
}

func (c *contests) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, uid)
}
