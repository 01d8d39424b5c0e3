// Package snmp is the inputs.snmp plugin: every interval it reads scalars and walks tables
// on SNMP agents (v1, v2c, v3) with Telegraf 1.39.3's options, measurement names, tags and
// field types. Agents are gathered concurrently, at most MaxConcurrentAgents at a time, so
// that a dead one times out without holding up the others; a table's columns are walked
// together and its rows emitted as they complete (plugins/common/snmp).
package snmp

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/snmp"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Retrieves SNMP values from remote agents"

// MaxConcurrentAgents bounds the agents one gather talks to at the same time.
const MaxConcurrentAgents = 32

//go:embed sample.conf
var sampleConfig string

// Snmp is the inputs.snmp plugin and its configuration. Build it with New.
type Snmp struct {
	// Agents are [scheme://]host[:port] addresses; scheme udp by default, port 161.
	Agents []string `toml:"agents"`
	// AgentHostTag names the tag that holds the agent's host; "agent_host" by default.
	AgentHostTag string `toml:"agent_host_tag"`
	// StopOnError stops an agent's gather at its first failed table.
	StopOnError bool `toml:"stop_on_error"`

	snmp.ClientConfig

	// Name is the measurement of the top-level fields; "snmp" by default.
	Name string `toml:"name"`
	// Fields are the top-level scalars, read with GET.
	Fields []snmp.Field `toml:"field"`
	// Tables are walked, one metric per row.
	Tables []snmp.Table `toml:"table"`

	log   *slog.Logger
	conns []*gosnmp.GoSNMP
	ready bool
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input        = (*Snmp)(nil)
	_ morse.Validator    = (*Snmp)(nil)
	_ morse.Initializer  = (*Snmp)(nil)
	_ morse.LoggerSetter = (*Snmp)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *Snmp {
	return &Snmp{Name: "snmp", ClientConfig: snmp.DefaultClientConfig(), log: slog.New(slog.DiscardHandler)}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "snmp",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// SetLogger takes the plugin's logger.
func (s *Snmp) SetLogger(l *slog.Logger) { s.log = l }

// Validate reports every problem of the options that needs no MIB.
func (s *Snmp) Validate() error {
	errs := []error{s.ClientConfig.Validate()}
	for i, t := range s.Tables {
		if t.Name == "" && t.Oid == "" {
			errs = append(errs, morse.Errorf(fmt.Sprintf("table[%d]", i), "one or both of the oid and name settings must be set"))
		}
	}
	for _, a := range s.Agents {
		if _, err := s.ClientConfig.NewClient(a); err != nil {
			errs = append(errs, morse.Errorf("agents", "%v", err))
		}
	}
	return errors.Join(errs...)
}

// Init loads the MIBs, translates the fields' and tables' OIDs and checks the options.
func (s *Snmp) Init() error {
	if err := s.Validate(); err != nil {
		return err
	}
	if err := snmp.LoadMIBs(s.Path, s.log); err != nil {
		return err
	}
	for i := range s.Tables {
		if err := s.Tables[i].Init(); err != nil {
			return fmt.Errorf("initializing table %s: %w", s.Tables[i].Name, err)
		}
	}
	for i := range s.Fields {
		if err := s.Fields[i].Init(); err != nil {
			return fmt.Errorf("initializing field %s: %w", s.Fields[i].Name, err)
		}
	}
	if s.AgentHostTag == "" {
		s.AgentHostTag = "agent_host"
	}
	if s.Name == "" {
		s.Name = "snmp"
	}
	s.conns = make([]*gosnmp.GoSNMP, len(s.Agents))
	s.ready = true
	return nil
}

// Gather reads every agent, concurrently. An agent's failure is reported with its address
// and does not stop the others.
func (s *Snmp) Gather(ctx context.Context, acc morse.Accumulator) error {
	if !s.ready {
		if err := s.Init(); err != nil {
			return err
		}
	}
	sem := make(chan struct{}, MaxConcurrentAgents)
	var wg sync.WaitGroup
	for i, agent := range s.Agents {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			s.gatherAgent(ctx, acc, i, agent)
		}()
	}
	wg.Wait()
	return nil
}

func (s *Snmp) gatherAgent(ctx context.Context, acc morse.Accumulator, i int, agent string) {
	gs, err := s.connection(ctx, i)
	if err != nil {
		acc.AddError(fmt.Errorf("agent %s: %w", agent, err))
		return
	}
	topTags := map[string]string{}
	if len(s.Fields) > 0 {
		now := time.Now()
		row, err := snmp.GetScalars(gs, s.Fields)
		if err != nil {
			acc.AddError(fmt.Errorf("agent %s: %w", agent, err))
			if s.StopOnError {
				return
			}
		}
		if row != nil {
			for _, t := range row.Tags {
				topTags[t.Key] = t.Value
			}
			acc.AddMetric(s.metric(s.Name, row, gs.Target, nil, nil, now))
		}
	}
	for ti := range s.Tables {
		t := &s.Tables[ti]
		now := time.Now()
		err := t.Walk(gs, func(r *snmp.Row) {
			acc.AddMetric(s.metric(t.Name, r, gs.Target, t.InheritTags, topTags, now))
		})
		if err != nil {
			acc.AddError(fmt.Errorf("agent %s: gathering table %s: %w", agent, t.Name, err))
			if s.StopOnError {
				return
			}
		}
	}
}

// metric makes a row's metric: its tags, the inherited top-level tags and the agent's
// host, unless the row has a tag of that name.
func (s *Snmp) metric(name string, r *snmp.Row, host string, inherit []string, top map[string]string, tm time.Time) morse.Metric {
	tags := r.Tags
	for _, k := range inherit {
		if v, ok := top[k]; ok {
			tags = setTag(tags, k, v)
		}
	}
	found := false
	for _, t := range tags {
		if t.Key == s.AgentHostTag {
			found = true
			break
		}
	}
	if !found {
		tags = append(tags, morse.Tag{Key: s.AgentHostTag, Value: host})
	}
	return morse.NewMetric(name, tags, r.Fields, tm)
}

func setTag(tags []morse.Tag, k, v string) []morse.Tag {
	for i := range tags {
		if tags[i].Key == k {
			tags[i].Value = v
			return tags
		}
	}
	return append(tags, morse.Tag{Key: k, Value: v})
}

// connection returns agent i's client, connecting it on first use. A client is used by
// one goroutine at a time: the gather of its agent.
func (s *Snmp) connection(ctx context.Context, i int) (*gosnmp.GoSNMP, error) {
	gs := s.conns[i]
	if gs == nil {
		var err error
		if gs, err = s.ClientConfig.NewClient(s.Agents[i]); err != nil {
			return nil, err
		}
		s.conns[i] = gs
	}
	gs.Context = ctx
	if gs.Conn == nil {
		if err := gs.Connect(); err != nil {
			gs.Conn = nil
			return nil, fmt.Errorf("setting up connection: %w", err)
		}
	}
	return gs, nil
}
