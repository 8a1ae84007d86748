package limits

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of CacheOptions.
const (
	DefaultCacheMaxBlock = 1024
	DefaultCacheShare    = 8
	DefaultCacheHold     = 2 * time.Second
	DefaultCacheMaxKeys  = 100_000
	// DefaultCacheTimeout bounds the background calls of a CachedLimiter
	// (block refills and give-backs) when CacheOptions leaves Timeout zero.
	DefaultCacheTimeout = time.Second
)

// minBlock is the smallest block worth reserving: below it a limit is too
// tight to cache and every check goes to the shared limiter. A key's first
// block is firstBlock units (or its limit's largest block, if smaller).
const (
	minBlock   = 2
	firstBlock = 8
)

// CacheOptions configures a CachedLimiter.
type CacheOptions struct {
	// ReplicasHint is how many replicas share the limits (values below 1
	// mean 1). With Share it bounds what all replicas may hold reserved for
	// one key.
	ReplicasHint int
	// Share: a replica reserves at most 1/(Share*ReplicasHint) of a
	// limit's burst at once (default DefaultCacheShare). Limits whose share
	// is below 2 units are not cached.
	Share int
	// MaxBlock bounds the units reserved at once per key (default
	// DefaultCacheMaxBlock). A key's blocks start small and double while
	// each lasts less than Hold/8, up to MaxBlock and the Share bound, so
	// one shared-limiter call admits about Hold/8 worth of a key's requests.
	MaxBlock int
	// Hold is how long a key must be idle before its unused reserved units
	// are given back and it is forgotten (default DefaultCacheHold). A key
	// is cached only when it was checked less than Hold ago.
	Hold time.Duration
	// MaxKeys bounds the keys remembered (default DefaultCacheMaxKeys);
	// past it new keys are checked without the cache.
	MaxKeys int
	// Timeout bounds each background call to the shared limiter (default
	// DefaultCacheTimeout). The checks made for a request use the
	// request's context.
	Timeout time.Duration
	// Now is the clock; default time.Now. Tests inject a fake one.
	Now func() time.Time
}

// CachedLimiter sits in front of a shared (Redis) limiter and admits busy
// keys that are clearly under their limit without a round trip per
// request: it reserves a block of units in the shared limiter — charging
// them there, atomically, as one check of cost 1+block — and admits the
// next requests of that key from the block locally. Keys that are quiet,
// near their limit, or whose limit is too tight for a block of 2 units are
// checked against the shared limiter on every request, exactly as without
// the cache.
//
// The error is one-sided and bounded:
//
//   - It never admits more than the shared limiter would: every unit it
//     admits was charged there before, so a key's fleet-wide admissions
//     over any window stay within the GCRA bound (burst + window×rate).
//   - It may admit less: units a replica holds reserved are unavailable to
//     the others. Blocks are reserved only while the shared limiter reports
//     at least half the burst remaining, a replica holds at most 1.5 blocks
//     per key (it reserves the next one when half of the last is left), and
//     a block is at most 1/(Share×ReplicasHint) of the burst,
//     so all replicas together hold at most 1.5/Share of a key's burst
//     (19% with the default Share 8), for at most Hold after the key goes
//     idle; then the units are given back.
//   - RateLimit-Remaining on a locally admitted request is this replica's
//     view: the shared remainder at its last reservation plus its unused
//     block, not the others' use since.
//
// While the shared limiter is a redislimit.Failover in its degraded state,
// blocks are taken from its local fallback instead, and unused units are
// not given back (a give-back would land in the wrong bucket). Units left
// from such a block are still admitted after Redis returns, uncharged
// there: at most 1.5 blocks per key and replica, once per outage.
//
// Only checks of cost 1 (requests) are cached; any other cost, and
// AllowAll, go straight to the shared limiter. It is safe for concurrent
// use. Close stops the background sweep and gives back every unused unit;
// call it before closing the shared limiter's client.
type CachedLimiter struct {
	next    Limiter
	now     func() time.Time
	epoch   time.Time
	share   int64
	maxBlk  int64
	hold    int64 // ns
	grow    int64 // ns: a block used up faster than this makes the next twice as big
	maxKeys int
	timeout time.Duration
	// async runs refills; tests replace it to run them inline.
	async func(func())

	seed   maphash.Seed
	shards [cacheShards]cacheShard
	keys   atomic.Int64

	mu       sync.Mutex // guards closed and refills
	idle     *sync.Cond // signalled when refills drops to zero
	closed   bool
	refills  int // background reservations running
	stop     chan struct{}
	sweeping sync.WaitGroup
}

var _ BatchLimiter = (*CachedLimiter)(nil)

const cacheShards = 64

type cacheShard struct {
	mu sync.Mutex
	m  map[string]*cacheEntry
}

// cacheEntry is what one replica knows of one key. Times are ns since the
// limiter's epoch. Guarded by its shard's mutex.
type cacheEntry struct {
	limit     Limit
	left      int64 // reserved units not yet admitted
	lastUsed  int64
	remaining int   // the shared limiter's Remaining at its last answer
	resetAt   int64 // when the shared bucket is full again, as last known
	busy      bool  // a reservation is in flight
	blk       int64 // size of the last block reserved (0: none yet)
	blkAt     int64 // when it was reserved
}

// NewCachedLimiter returns a cache in front of next and starts its
// background sweep.
func NewCachedLimiter(next Limiter, opts CacheOptions) *CachedLimiter {
	if opts.ReplicasHint < 1 {
		opts.ReplicasHint = 1
	}
	if opts.Share < 1 {
		opts.Share = DefaultCacheShare
	}
	if opts.MaxBlock < 1 {
		opts.MaxBlock = DefaultCacheMaxBlock
	}
	if opts.Hold <= 0 {
		opts.Hold = DefaultCacheHold
	}
	if opts.MaxKeys < 1 {
		opts.MaxKeys = DefaultCacheMaxKeys
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultCacheTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &CachedLimiter{
		next:    next,
		now:     opts.Now,
		epoch:   opts.Now(),
		share:   int64(opts.Share) * int64(opts.ReplicasHint),
		maxBlk:  int64(opts.MaxBlock),
		hold:    int64(opts.Hold),
		grow:    int64(opts.Hold / 8),
		maxKeys: opts.MaxKeys,
		timeout: opts.Timeout,
		async:   func(f func()) { go f() },
		seed:    maphash.MakeSeed(),
		stop:    make(chan struct{}),
	}
	c.idle = sync.NewCond(&c.mu)
	for i := range c.shards {
		c.shards[i].m = make(map[string]*cacheEntry)
	}
	c.sweeping.Add(1)
	go c.sweeper(opts.Hold / 2)
	return c
}

// block is the most units a replica reserves at once under l (0: l is not
// cached). A block plus the request that reserves it always fits the
// burst. l must be valid.
func (c *CachedLimiter) block(l Limit) int64 {
	b := min(c.maxBlk, l.Capacity()/c.share, l.Capacity()-1)
	if b < minBlock {
		return 0
	}
	return b
}

// nextBlock sizes the reservation about to be made for e, at most k: the
// first is small, and each one made less than c.grow after the previous is
// twice as big, so a busy key soon reserves enough to outlast a round trip
// while a moderate one does not hold more than it uses. The shard's mutex
// must be held.
func (c *CachedLimiter) nextBlock(e *cacheEntry, now, k int64) int64 {
	switch {
	case e.blk == 0:
		e.blk = firstBlock
	case now-e.blkAt < c.grow:
		e.blk *= 2
	}
	e.blk = min(e.blk, k)
	e.blkAt = now
	return e.blk
}

// clearlyUnder reports whether a key whose shared remainder is remaining
// may reserve blocks: at least half its burst is left.
func clearlyUnder(remaining int, l Limit) bool {
	return int64(remaining)*2 >= l.Capacity()
}

func (c *CachedLimiter) clock() int64 { return int64(c.now().Sub(c.epoch)) }

func (c *CachedLimiter) shard(key string) *cacheShard {
	return &c.shards[maphash.String(c.seed, key)%cacheShards]
}

// Allow implements Limiter. A cost-1 check of a key with reserved units
// left is answered locally (admitFromBlock); every other check is one call
// to the shared limiter (allowShared: cost 1+block when it reserves), whose
// errors it returns as they are.
func (c *CachedLimiter) Allow(ctx context.Context, key string, l Limit, cost int64) (Decision, error) {
	if cost != 1 {
		return c.next.Allow(ctx, key, l, cost)
	}
	if err := l.ValidateCost(cost); err != nil {
		return l.Denial(), err
	}
	k := c.block(l)
	if k == 0 {
		return c.next.Allow(ctx, key, l, cost)
	}
	now := c.clock()
	sh := c.shard(key)
	sh.mu.Lock()
	e := sh.m[key]
	stale, staleLimit := e.forgetOtherLimit(l, now)
	if e != nil && e.limit == l && e.left >= 1 {
		d, refill := c.admitFromBlock(e, now, k)
		sh.mu.Unlock()
		if refill > 0 {
			c.goRefill(key, e, l, refill)
		}
		return d, nil
	}
	var size int64
	if e == nil {
		e = c.remember(sh, key, l, now)
	} else {
		size = c.reservation(e, l, now, k)
	}
	sh.mu.Unlock()
	if stale > 0 {
		c.giveBack(key, staleLimit, stale)
	}
	return c.allowShared(ctx, sh, key, e, l, now, size)
}

// forgetOtherLimit drops the block of a key whose limit changed to l: it
// was reserved under the old limit, which it returns with the units to give
// back under it. The entry starts over under l. e may be nil; an entry with
// a reservation in flight is left alone until it lands. The shard's mutex
// must be held.
func (e *cacheEntry) forgetOtherLimit(l Limit, now int64) (units int64, old Limit) {
	if e == nil || e.limit == l || e.busy {
		return 0, Limit{}
	}
	units, old = e.left, e.limit
	e.left = 0
	e.limit, e.remaining, e.resetAt, e.blk = l, 0, now, 0
	return units, old
}

// admitFromBlock is the fast path: it admits one request from e's reserved
// units, and once half of the last block is used (and the key is still
// clearly under its limit) marks e busy and returns the size of the next
// block to reserve in the background, so the key's requests need not wait
// for the shared limiter when this one runs out; 0 for none. It allocates
// nothing. The shard's mutex must be held.
func (c *CachedLimiter) admitFromBlock(e *cacheEntry, now, k int64) (Decision, int64) {
	e.left--
	e.lastUsed = now
	d := e.decision(now)
	if e.busy || e.left >= (e.blk+1)/2 || !clearlyUnder(e.remaining, e.limit) || !c.startRefill() {
		return d, 0
	}
	e.busy = true
	return d, c.nextBlock(e, now, k)
}

// reservation decides whether the shared call about to be made for e
// reserves a block with the request: only for a key checked less than Hold
// ago whose last known remainder is clearly under the limit, and with no
// reservation in flight. It returns the block's size (0: check the request
// alone) and marks e busy for a reservation. The shard's mutex must be
// held.
func (c *CachedLimiter) reservation(e *cacheEntry, l Limit, now, k int64) int64 {
	if e.limit != l {
		return 0 // a reservation under the old limit is still in flight
	}
	reserve := !e.busy && now-e.lastUsed < c.hold && clearlyUnder(e.remaining, l)
	e.lastUsed = now
	if !reserve {
		return 0
	}
	e.busy = true
	return c.nextBlock(e, now, k)
}

// allowShared is the slow path: the shared limiter decides. With size > 0
// it first tries to charge the request and a block of size units in one
// call; when the block does not fit, the request is checked alone. e (nil
// when the cache holds too many keys) learns the shared answer. The shard's
// mutex must not be held.
func (c *CachedLimiter) allowShared(ctx context.Context, sh *cacheShard, key string, e *cacheEntry, l Limit, now, size int64) (Decision, error) {
	if size > 0 {
		d, reserved, err := c.reserve(ctx, sh, key, e, l, now, size)
		if reserved || err != nil {
			return d, err
		}
	}
	d, err := c.next.Allow(ctx, key, l, 1)
	if err == nil && e != nil {
		sh.mu.Lock()
		if e.limit == l {
			e.learn(d, now)
		}
		sh.mu.Unlock()
	}
	return d, err
}

// reserve charges the request and a block of size units for e in one
// shared call, and reports whether they passed. The block's units go to e,
// or back to the shared limiter if e was forgotten meanwhile (a sweep). It
// clears the busy mark reservation set, whatever the outcome. The shard's
// mutex must not be held.
func (c *CachedLimiter) reserve(ctx context.Context, sh *cacheShard, key string, e *cacheEntry, l Limit, now, size int64) (Decision, bool, error) {
	d, err := c.next.Allow(ctx, key, l, 1+size)
	reserved := err == nil && d.Allowed
	sh.mu.Lock()
	e.busy = false
	kept := reserved && sh.m[key] == e
	if kept {
		e.left += size
		e.learn(d, now)
		d = e.decision(now)
	}
	sh.mu.Unlock()
	if reserved && !kept {
		c.giveBack(key, l, size)
	}
	return d, reserved, err
}

// remember adds an entry for key when there is room (nil when there is
// not). sh.mu must be held.
func (c *CachedLimiter) remember(sh *cacheShard, key string, l Limit, now int64) *cacheEntry {
	if c.keys.Add(1) > int64(c.maxKeys) {
		c.keys.Add(-1)
		return nil
	}
	e := &cacheEntry{limit: l, lastUsed: now, resetAt: now}
	sh.m[key] = e
	return e
}

// learn records a shared decision made at now. The shard's mutex must be
// held.
func (e *cacheEntry) learn(d Decision, now int64) {
	e.remaining = d.Remaining
	e.resetAt = now + int64(d.ResetAfter)
}

// decision is the answer for a request admitted from the block: this
// replica's view of the bucket. The shard's mutex must be held.
func (e *cacheEntry) decision(now int64) Decision {
	capacity := e.limit.Capacity()
	rem := min(int64(e.remaining)+e.left, capacity)
	return Decision{
		Allowed:    true,
		Limit:      int(capacity),
		Remaining:  int(rem),
		ResetAfter: time.Duration(max(e.resetAt-now, 0)),
	}
}

// startRefill counts a background reservation about to start; false once
// the limiter is closed.
func (c *CachedLimiter) startRefill() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.refills++
	return true
}

func (c *CachedLimiter) refillDone() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refills--; c.refills == 0 {
		c.idle.Broadcast()
	}
}

// goRefill runs refill through c.async. A function of its own, so the
// closure captures copies and the fast path allocates nothing.
func (c *CachedLimiter) goRefill(key string, e *cacheEntry, l Limit, k int64) {
	c.async(func() { c.refill(key, e, l, k) })
}

// refill reserves another block for a busy key in the background, so its
// requests do not wait for the shared limiter when the block runs out.
func (c *CachedLimiter) refill(key string, e *cacheEntry, l Limit, k int64) {
	defer c.refillDone()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	d, err := c.next.Allow(ctx, key, l, k)
	cancel()
	now := c.clock()
	sh := c.shard(key)
	sh.mu.Lock()
	kept := sh.m[key] == e && e.limit == l
	e.busy = false
	if err == nil && kept {
		if d.Allowed {
			e.left += k
		}
		e.learn(d, now)
	}
	sh.mu.Unlock()
	if err == nil && d.Allowed && !kept {
		c.giveBack(key, l, k)
	}
}

// giveBack refunds unused reserved units, best effort: a refund that fails
// leaves them charged, which errs on the side of the limit. Nothing is
// given back while the shared limiter is degraded: the units were reserved
// in Redis and would land in the local fallback's bucket.
func (c *CachedLimiter) giveBack(key string, l Limit, units int64) {
	if c.degraded() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	_, _ = c.next.Allow(ctx, key, l, -units)
}

func (c *CachedLimiter) degraded() bool {
	d, ok := c.next.(interface{ Degraded() bool })
	return ok && d.Degraded()
}

// AllowAll implements BatchLimiter by passing the checks to the shared
// limiter: batches (uploads) are rare and must be all-or-nothing there.
func (c *CachedLimiter) AllowAll(ctx context.Context, checks []Check) ([]Decision, error) {
	return AllowAll(ctx, c.next, checks)
}

// sweeper forgets idle keys every interval and gives back their units.
func (c *CachedLimiter) sweeper(interval time.Duration) {
	defer c.sweeping.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.sweep(false)
		}
	}
}

// sweep removes the keys idle for Hold or longer (every key when all is
// set, except those with a reservation in flight) and gives back their
// unused units in one batch.
func (c *CachedLimiter) sweep(all bool) {
	now := c.clock()
	var refunds []Check
	removed := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for key, e := range sh.m {
			if e.busy || (!all && now-e.lastUsed < c.hold) {
				continue
			}
			delete(sh.m, key)
			removed++
			if e.left > 0 {
				refunds = append(refunds, Check{Key: key, Limit: e.limit, Cost: -e.left})
			}
		}
		sh.mu.Unlock()
	}
	c.keys.Add(int64(-removed))
	if len(refunds) == 0 || c.degraded() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	// Refunds never deny, so one batch gives every key back its units
	// (one pipelined round trip on Redis).
	_, _ = AllowAll(ctx, c.next, refunds)
}

// Close stops the sweep, waits for background reservations, and gives back
// every unused reserved unit. Checks keep working after Close (without
// background refills); call it once the server has stopped taking
// requests, before the shared limiter's client is closed.
func (c *CachedLimiter) Close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.stop)
	}
	for c.refills > 0 {
		c.idle.Wait()
	}
	c.mu.Unlock()
	c.sweeping.Wait()
	c.sweep(true)
	return nil
}

// Len returns the number of keys remembered (for tests and metrics).
func (c *CachedLimiter) Len() int { return int(c.keys.Load()) }
