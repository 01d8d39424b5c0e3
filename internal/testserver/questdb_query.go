package testserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// QuestResult is QuestDB's /exec answer to a query. Numbers stay json.Number, so that a
// test compares a LONG exactly.
type QuestResult struct {
	Columns []QuestColumn `json:"columns"`
	Dataset [][]any       `json:"dataset"`
	Count   int           `json:"count"`
}

// QuestColumn names a result column and its QuestDB type, such as LONG, DOUBLE, VARCHAR,
// SYMBOL, BOOLEAN or TIMESTAMP.
type QuestColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// QuestError is QuestDB's answer to a query it refused.
type QuestError struct {
	Query    string `json:"query"`
	Message  string `json:"error"`
	Position int    `json:"position"`
	Status   int    `json:"-"`
}

func (e *QuestError) Error() string {
	return fmt.Sprintf("questdb: %d: %s (query %q, position %d)", e.Status, e.Message, e.Query, e.Position)
}

// Query runs one SQL statement through /exec and returns its answer, or a *QuestError when
// QuestDB refused it.
func (q *QuestDB) Query(ctx context.Context, sql string) (QuestResult, error) {
	u := q.URL() + "/exec?" + url.Values{"query": {sql}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return QuestResult{}, err
	}
	if q.opts.HTTPUser != "" {
		req.SetBasicAuth(q.opts.HTTPUser, q.opts.HTTPPassword)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return QuestResult{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return QuestResult{}, err
	}
	if resp.StatusCode != http.StatusOK {
		qe := &QuestError{Status: resp.StatusCode}
		if json.Unmarshal(body, qe) != nil || qe.Message == "" {
			qe.Message = strings.TrimSpace(string(body))
		}
		return QuestResult{}, qe
	}
	var out QuestResult
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return QuestResult{}, fmt.Errorf("questdb: %q answered %s: %w", sql, body, err)
	}
	return out, nil
}

// MustQuery runs a query and fails the test on any error.
func (q *QuestDB) MustQuery(t testing.TB, sql string) QuestResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := q.Query(ctx, sql)
	require.NoError(t, err)
	return res
}

// Count returns `SELECT count() FROM table`, or -1 while the table does not exist.
func (q *QuestDB) Count(t testing.TB, table string) int64 {
	t.Helper()
	n, err := q.count(table)
	require.NoError(t, err)
	return n
}

func (q *QuestDB) count(table string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := q.Query(ctx, "SELECT count() FROM "+QuoteIdent(table))
	if qe, ok := err.(*QuestError); ok && strings.Contains(qe.Message, "does not exist") {
		return -1, nil
	}
	if err != nil {
		return 0, err
	}
	if len(res.Dataset) != 1 || len(res.Dataset[0]) != 1 {
		return 0, fmt.Errorf("questdb: count of %s answered %v", table, res.Dataset)
	}
	n, ok := res.Dataset[0][0].(json.Number)
	if !ok {
		return 0, fmt.Errorf("questdb: count of %s answered %v", table, res.Dataset)
	}
	return n.Int64()
}

// WaitCount waits until table holds want rows, then until every write QuestDB accepted has
// been applied, and checks the count once more, so that a test sees neither too few rows
// (applied later) nor too many (a late write on top). It fails after timeout.
func (q *QuestDB) WaitCount(t testing.TB, table string, want int64, timeout time.Duration) {
	t.Helper()
	var got int64
	err := poll(timeout, func() (bool, error) {
		var err error
		got, err = q.count(table)
		return got >= want, err
	})
	require.NoError(t, err, "testserver: table %s holds %d rows, want %d", table, got, want)
	q.WaitApplied(t, timeout)
	require.Equal(t, want, q.Count(t, table), "testserver: rows of %s", table)
}

// WaitApplied waits until QuestDB has applied every committed WAL transaction of every
// table, and fails if a table is suspended (a write QuestDB could not apply).
func (q *QuestDB) WaitApplied(t testing.TB, timeout time.Duration) {
	t.Helper()
	var pending []string
	err := poll(timeout, func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		res, err := q.Query(ctx, "SELECT name, suspended, writerTxn, sequencerTxn FROM wal_tables()")
		if err != nil {
			return false, err
		}
		pending = pending[:0]
		for _, row := range res.Dataset {
			if row[1] == true {
				return false, fmt.Errorf("questdb: table %v is suspended", row[0])
			}
			if fmt.Sprint(row[2]) != fmt.Sprint(row[3]) {
				pending = append(pending, fmt.Sprint(row))
			}
		}
		return len(pending) == 0, nil
	})
	require.NoError(t, err, "testserver: WAL not applied: %v", pending)
}

// poll calls check every 50ms until it reports done, returns an error, or timeout passes.
func poll(timeout time.Duration, check func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		done, err := check()
		switch {
		case err != nil:
			return err
		case done:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("not done after %s", timeout)
		}
		<-tick.C
	}
}

// QuoteIdent quotes a table or column name for QuestDB's SQL.
func QuoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
