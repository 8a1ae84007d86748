package spend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/internal/outage"
	"github.com/aigateway/gateway/policy/keys"
)

// Batch is one user's reports ready to be stored, each report's key's
// workspace resolved.
type Batch struct {
	UserID  string
	Reports []Report
	// Workspaces maps the key of every report to its workspace ("" for a
	// key bound to no workspace).
	Workspaces map[string]string
}

// Store keeps reports durably and sums them.
type Store interface {
	// KeysOf returns, of ids, those that are keys of userID, with their
	// workspace ("" for none).
	KeysOf(ctx context.Context, userID string, ids []string) (map[string]string, error)
	// RecordUsage stores the reports not stored before (by user and id)
	// and adds them to the sums, in one transaction; it returns how many
	// were new. A report stored concurrently by another replica is a
	// duplicate here, never counted twice; one stored before with other
	// content (Report.SameContent) is *ReplayConflictError and nothing of
	// the batch is kept. b.Reports is the caller's to reuse once it
	// returns.
	RecordUsage(ctx context.Context, b Batch) (accepted int, err error)
	// KeyUsage sums the usage of each key in ids in the windows of w.
	KeyUsage(ctx context.Context, ids []string, w Windows) (map[string]Usage, error)
	// DailyUsage sums the usage of scope per UTC day, for the days first
	// to last (inclusive, as Day numbers them), in one query; days without
	// usage may be left out.
	DailyUsage(ctx context.Context, scope DailyScope, first, last int64) ([]DaySum, error)
	// Activity sums scope's rollups from day first to last (inclusive)
	// per day, model, endpoint and provider, and per workspace with
	// byWorkspace, in any order.
	Activity(ctx context.Context, scope DailyScope, first, last int64, byWorkspace bool) ([]ActivityRow, error)
	// Standings returns every key with a limit and every budget, with
	// their usage in the windows of w.
	Standings(ctx context.Context, w Windows) ([]KeyStanding, []BudgetStanding, error)
	// Budgets returns workspaceID's budgets and its include_byok_in_budgets.
	Budgets(ctx context.Context, workspaceID string) ([]Budget, bool, error)
	// PutBudget creates or replaces the budget of b.Interval, checking the
	// order against the others under the workspace's lock (check is called
	// with the budgets set), and sets include_byok_in_budgets when
	// includeBYOK is not nil. created reports a new budget.
	PutBudget(ctx context.Context, b Budget, includeBYOK *bool, check func(map[Interval]money.Micros) error) (stored Budget, created bool, err error)
	// DeleteBudget removes workspaceID's budget of iv, or ErrNoBudget.
	DeleteBudget(ctx context.Context, workspaceID string, iv Interval) error
}

// ErrReplayConflict: a report's id was counted before with other content.
var ErrReplayConflict = errors.New("a report's id was already counted with other content")

// ReplayConflictError names the report whose id was counted before with
// other content (another key, cost, time, model...): nothing of its batch
// is counted, since a reporter that reuses ids would otherwise lose
// billing without a word. Its fields are the reporter's own, safe to show.
type ReplayConflictError struct {
	ID string
	// Index is the report's place in its batch; -1 for a report alone.
	Index int
}

func (e *ReplayConflictError) Error() string {
	return fmt.Sprintf("report %q was already counted with other content", e.ID)
}

// Unwrap makes errors.Is(err, ErrReplayConflict) hold.
func (e *ReplayConflictError) Unwrap() error { return ErrReplayConflict }

// ErrNoBudget: the workspace has no budget of that interval.
var ErrNoBudget = errors.New("no budget of this interval")

// ErrNotServiceKey: only service keys report usage.
var ErrNotServiceKey = fmt.Errorf("%w: only service keys report usage", keys.ErrForbidden)

// Service is the rules of /usage and the budget routes.
type Service struct {
	store  Store
	now    func() time.Time
	newID  func() string
	record Runner
	// learn is told the totals each recording left (TellTotals).
	learn func(Touched)
	// budgetsChanged is told after a budget was set or removed.
	budgetsChanged func(context.Context)
}

// TellTotals has learn told the totals of the keys and workspaces each
// recording changed, when the store can tell them (TotalsRecorder): the
// replica's Enforcer.Learn, so the report that crosses a limit refuses its
// key here at once.
func (s *Service) TellTotals(learn func(Touched)) { s.learn = learn }

// OnBudgetsChanged makes s tell f, once the change is stored, that a
// workspace's budget was set or removed, so that this replica's spend view
// takes it in at once rather than at its next refresh.
func (s *Service) OnBudgetsChanged(f func(context.Context)) { s.budgetsChanged = f }

func (s *Service) tellBudgets(ctx context.Context) {
	if s.budgetsChanged != nil {
		s.budgetsChanged(ctx)
	}
}

// Runner runs work and returns once it has, or returns ctx's error without
// running it if ctx ends first.
type Runner func(ctx context.Context, work func()) error

// NewService returns the Service; newID makes budget ids. Recording
// reports (reading a batch, storing it) runs through record: the gateway
// gives it threads of lowered priority (internal/lowprio), so a batch of
// 1,000, milliseconds of CPU, does not delay the requests sharing the
// process. A nil record runs it on the caller's goroutine.
func NewService(store Store, newID func() string, record Runner) *Service {
	if record == nil {
		record = func(_ context.Context, work func()) error { work(); return nil }
	}
	return &Service{store: store, now: time.Now, newID: newID, record: record}
}

// Result counts the reports of one call.
type Result struct {
	Accepted, Duplicates int
}

// ReportBatch records a batch of reports (POST /usage) for the service key
// caller. read is the edge decoding the batch into the form it is given
// (see BatchForm); it runs inside the Runner, as storing the batch does,
// since decoding a batch of 1,000 is most of its cost. A refused batch is
// *invalid.Problems naming the first problem met; a report of a key that is
// not the caller's user's refuses it too.
func (s *Service) ReportBatch(ctx context.Context, caller *keys.APIKey, read func(*BatchForm)) (res Result, err error) {
	if caller.Role != keys.RoleService {
		return Result{}, ErrNotServiceKey
	}
	if runErr := s.record(ctx, func() { res, err = s.reportBatch(ctx, caller.UserID, read) }); runErr != nil {
		return Result{}, runErr
	}
	return res, err
}

func (s *Service) reportBatch(ctx context.Context, userID string, read func(*BatchForm)) (Result, error) {
	b := batchForms.Get().(*BatchForm)
	defer func() {
		clear(b.reports[:cap(b.reports)]) // keeps no report's strings alive in the pool
		*b = BatchForm{reports: b.reports[:0]}
		batchForms.Put(b)
	}()
	b.now = s.now()
	read(b)
	reports, err := b.batch()
	if err != nil {
		return Result{}, err
	}
	return s.recordReports(ctx, userID, reports, "reports[%d].key")
}

// batchForms recycle the reports of a batch, which nothing keeps once it
// is recorded: a batch of 1,000 is 70 KiB the collector need not chase on
// a replica ingesting 20 of them a second.
var batchForms = sync.Pool{New: func() any { return new(BatchForm) }}

// ReportOne records one report of the key keyID (POST /keys/{hash}/usage)
// for the service key caller. read is the edge decoding the report into
// the form it is given, inside the Runner as for ReportBatch. A refused
// report is *invalid.Problems naming the first problem met; a key that is
// not the caller's user's is keys.ErrKeyNotFound.
func (s *Service) ReportOne(ctx context.Context, caller *keys.APIKey, keyID string, read func(*ReportForm)) (res Result, err error) {
	if caller.Role != keys.RoleService {
		return Result{}, ErrNotServiceKey
	}
	if _, ok := keys.ParseID(keyID); !ok {
		return Result{}, keys.ErrKeyNotFound
	}
	if runErr := s.record(ctx, func() { res, err = s.reportOne(ctx, caller.UserID, keyID, read) }); runErr != nil {
		return Result{}, runErr
	}
	return res, err
}

func (s *Service) reportOne(ctx context.Context, userID, keyID string, read func(*ReportForm)) (Result, error) {
	f := ReportForm{now: s.now(), index: -1}
	read(&f)
	r, err := f.report()
	if err != nil {
		return Result{}, err
	}
	r.KeyID = keyID
	return s.recordReports(ctx, userID, []Report{r}, "")
}

// recordReports stores reports once their keys are known to be userID's,
// asking the store once. A key of another user (or none) is refused: in a
// batch as the field keyField names (a format taking the report's index),
// for a report alone (keyField "") as keys.ErrKeyNotFound, since its key is
// the route's.
func (s *Service) recordReports(ctx context.Context, userID string, reports []Report, keyField string) (Result, error) {
	// A batch is usually a few keys' reports: only their distinct ids are
	// looked up.
	distinct := make(map[string]struct{})
	var ids []string
	for _, r := range reports {
		if _, ok := distinct[r.KeyID]; !ok {
			distinct[r.KeyID] = struct{}{}
			ids = append(ids, r.KeyID)
		}
	}
	known, err := s.store.KeysOf(ctx, userID, ids)
	if err != nil {
		return Result{}, err
	}
	for i, r := range reports {
		if _, ok := known[r.KeyID]; !ok {
			if keyField == "" {
				return Result{}, keys.ErrKeyNotFound
			}
			return Result{}, invalid.One(fmt.Sprintf(keyField, i), "no such key of this user")
		}
	}
	n, err := s.recordBatch(ctx, Batch{UserID: userID, Reports: reports, Workspaces: known})
	if err != nil {
		return Result{}, placeConflict(err, reports, keyField == "")
	}
	return Result{Accepted: n, Duplicates: len(reports) - n}, nil
}

// recordBatch records b, telling learn the totals it left when the store
// can say them.
func (s *Service) recordBatch(ctx context.Context, b Batch) (int, error) {
	tr, ok := s.store.(TotalsRecorder)
	if !ok || s.learn == nil {
		return s.store.RecordUsage(ctx, b)
	}
	n, touched, err := tr.RecordUsageTotals(ctx, b)
	if err == nil {
		s.learn(touched)
	}
	return n, err
}

// placeConflict fills in the index of the report a ReplayConflictError
// names (-1 for a report alone).
func placeConflict(err error, reports []Report, alone bool) error {
	var rc *ReplayConflictError
	if !errors.As(err, &rc) {
		return err
	}
	placed := &ReplayConflictError{ID: rc.ID, Index: -1}
	if !alone {
		for i := range reports {
			if reports[i].ID == rc.ID {
				placed.Index = i
				break
			}
		}
	}
	return placed
}

// KeyUsage returns the usage of keys now.
func (s *Service) KeyUsage(ctx context.Context, ids []string) (map[string]Usage, error) {
	return s.store.KeyUsage(ctx, ids, WindowsAt(s.now()))
}

// BudgetView is a workspace's budgets and its BYOK setting.
type BudgetView struct {
	Budgets     []Budget
	IncludeBYOK bool
}

// Budgets lists workspaceID's budgets, widest interval first.
func (s *Service) Budgets(ctx context.Context, workspaceID string) (BudgetView, error) {
	bs, byok, err := s.store.Budgets(ctx, workspaceID)
	if err != nil {
		return BudgetView{}, err
	}
	ordered := make([]Budget, 0, len(bs))
	for _, iv := range Intervals {
		for _, b := range bs {
			if b.Interval == iv {
				ordered = append(ordered, b)
			}
		}
	}
	return BudgetView{Budgets: ordered, IncludeBYOK: byok}, nil
}

// Budget returns workspaceID's budget of iv, or ErrNoBudget.
func (s *Service) Budget(ctx context.Context, workspaceID string, iv Interval) (Budget, bool, error) {
	v, err := s.Budgets(ctx, workspaceID)
	if err != nil {
		return Budget{}, false, err
	}
	for _, b := range v.Budgets {
		if b.Interval == iv {
			return b, v.IncludeBYOK, nil
		}
	}
	return Budget{}, false, ErrNoBudget
}

// PutBudget sets workspaceID's budget of iv as req, checked as
// BudgetRequest.Check does (*invalid.Problems, nothing changed), and, when
// req says, its include_byok_in_budgets. A limit that breaks the order of
// the workspace's budgets is *OrderError. created reports a new budget;
// includeBYOK is the workspace's setting afterwards.
func (s *Service) PutBudget(ctx context.Context, workspaceID string, iv Interval, req BudgetRequest) (b Budget, created, includeBYOK bool, err error) {
	if err := req.Check(); err != nil {
		return Budget{}, false, false, err
	}
	limit, byok := *req.Limit, req.IncludeBYOK
	now := s.now().UTC().Truncate(time.Microsecond)
	b = Budget{ID: s.newID(), WorkspaceID: workspaceID, Interval: iv, Limit: limit, CreatedAt: now, UpdatedAt: now}
	stored, created, err := s.store.PutBudget(ctx, b, byok, func(set map[Interval]money.Micros) error {
		return CheckOrder(set, iv, limit)
	})
	if err != nil {
		return Budget{}, false, false, err
	}
	s.tellBudgets(ctx)
	_, includeBYOK, err = s.store.Budgets(ctx, workspaceID)
	return stored, created, includeBYOK, err
}

// DeleteBudget removes workspaceID's budget of iv.
func (s *Service) DeleteBudget(ctx context.Context, workspaceID string, iv Interval) error {
	if err := s.store.DeleteBudget(ctx, workspaceID, iv); err != nil {
		return err
	}
	s.tellBudgets(ctx)
	return nil
}

// Enforcer holds this replica's view of what is spent and keeps it fresh:
// requests read it (Decide) without a round trip; Run refreshes it in the
// background every Interval, at a cost that does not grow with requests.
// While the store is out of reach the last view stays.
type Enforcer struct {
	Store    Store
	Interval time.Duration // default 1s
	// OnHealth is told when refreshing starts failing (the error) and
	// when it works again (nil), once per transition.
	OnHealth func(error)

	snap    atomic.Pointer[Snapshot]
	failing bool
	now     func() time.Time

	// With a ChangeFeed, the view the snapshots are decided from: guarded
	// by mu, as both the refresh and Learn change it.
	mu   sync.Mutex
	view *view
}

// ErrNotReady: the Enforcer has not read what is spent yet, so it cannot
// decide (503, try again); service keys, never refused for spend, pass.
// It wraps outage.ErrUnavailable.
var ErrNotReady = fmt.Errorf("spend limits and budgets not read yet: %w", outage.ErrUnavailable)

// Decide is the 402 decision for k on this replica's current view. Until
// the first refresh has succeeded there is no view, and an empty one
// would let every key spend: it answers ErrNotReady instead.
func (e *Enforcer) Decide(k *keys.APIKey) error {
	s := e.snap.Load()
	if s == nil && k.Role != keys.RoleService {
		return ErrNotReady
	}
	return s.Decide(k)
}

// Ready reports whether the Enforcer has a view to decide on (nil) or
// ErrNotReady: the replica's readiness check, so that no load balancer
// sends it requests before it knows what is spent.
func (e *Enforcer) Ready(context.Context) error {
	if e.snap.Load() == nil {
		return ErrNotReady
	}
	return nil
}

func (e *Enforcer) windows() Windows {
	if e.now != nil {
		return WindowsAt(e.now())
	}
	return WindowsAt(time.Now())
}

// Refresh computes a new view now. With a ChangeFeed it reads what
// changed since the last refresh (everything, the first time) and decides
// again the keys and workspaces that did, or all of them once a window
// has turned; otherwise it reads every standing.
func (e *Enforcer) Refresh(ctx context.Context) error {
	if feed, ok := e.Store.(ChangeFeed); ok {
		return e.refreshFrom(ctx, feed)
	}
	w := e.windows()
	ks, bs, err := e.Store.Standings(ctx, w)
	if err != nil {
		return err
	}
	e.snap.Store(NewSnapshot(w, ks, bs))
	return nil
}

func (e *Enforcer) refreshFrom(ctx context.Context, feed ChangeFeed) error {
	e.mu.Lock()
	cursor, all := int64(0), e.view == nil
	if !all {
		cursor = e.view.cursor
	}
	e.mu.Unlock()
	c, err := feed.StandingsSince(ctx, cursor, all)
	if err != nil {
		return err
	}
	w := e.windows()
	e.mu.Lock()
	defer e.mu.Unlock()
	if all || e.view == nil {
		e.view = &view{keys: map[string]*keyEntry{}, workspaces: map[string]*workspaceEntry{}}
		e.view.apply(c)
		e.view.cursor = c.Next
		e.snap.Store(e.view.snapshot(w))
		return nil
	}
	if c.Next < e.view.cursor {
		// A refresh begun before one that has applied already (a change
		// on this replica refreshes beside the background loop): what it
		// read is older than the view.
		return nil
	}
	keyIDs, wsIDs := e.view.apply(c)
	e.view.cursor = c.Next
	e.snap.Store(e.view.update(e.snap.Load(), w, keyIDs, wsIDs))
	return nil
}

// Learn takes in the totals a recording on this replica left, so that the
// report that crosses a limit or a budget refuses its key or workspace
// here at once rather than at the next refresh. Only keys and workspaces
// the view holds (with a limit, with budgets) are changed; nothing is
// learnt before the first refresh.
func (e *Enforcer) Learn(t Touched) {
	if len(t.Keys) == 0 && len(t.Workspaces) == 0 {
		return
	}
	w := e.windows()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.view == nil {
		return
	}
	keyIDs, wsIDs := e.view.learn(t)
	e.snap.Store(e.view.update(e.snap.Load(), w, keyIDs, wsIDs))
}

// Run refreshes until ctx ends.
func (e *Enforcer) Run(ctx context.Context) {
	interval := e.Interval
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		err := e.Refresh(ctx)
		if ctx.Err() != nil {
			return
		}
		if (err != nil) != e.failing {
			e.failing = err != nil
			if e.OnHealth != nil {
				e.OnHealth(err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
