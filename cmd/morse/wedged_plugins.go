//go:build wedgetest

package main

// Plugins that wedge their loops on purpose, ignoring their contexts, for the watchdog test
// (TestWatchdogStopsPingingAWedgedAgent). They exist only in a binary built with
// -tags wedgetest; the shipped binary never has them.

import (
	"context"
	"time"

	"github.com/morse-agent/morse"
)

type wedgedInput struct{}

func (wedgedInput) Gather(context.Context, morse.Accumulator) error { select {} }

type wedgedOutput struct{}

func (wedgedOutput) Connect(context.Context) error               { return nil }
func (wedgedOutput) Close() error                                { return nil }
func (wedgedOutput) Write(context.Context, []morse.Metric) error { select {} }
func (wedgedOutput) WriteTimeout() time.Duration                 { return time.Second }

func init() {
	morse.RegisterInput(morse.InputInfo{Name: "wedged", Description: "gathers forever (tests only)",
		New: func() morse.Input { return wedgedInput{} }})
	morse.RegisterOutput(morse.OutputInfo{Name: "wedged", Description: "writes forever (tests only)",
		New: func() morse.Output { return wedgedOutput{} }})
}
