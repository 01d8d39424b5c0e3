package modbus

import (
	"context"
	"errors"
	"fmt"
	"time"

	mb "github.com/grid-x/modbus"
)

// readSlave reads every request of slave id, asking again while it answers "busy", up to
// busy_retries times.
func (m *Modbus) readSlave(ctx context.Context, id byte) error {
	m.handler.SetSlave(id)
	d := m.devices[id]
	for retry := 0; ; retry++ {
		err := m.readDevice(ctx, d)
		var mbErr *mb.Error
		if err == nil || retry >= m.BusyRetries || !errors.As(err, &mbErr) || mbErr.ExceptionCode != mb.ExceptionCodeServerDeviceBusy {
			return err
		}
		if err := pause(ctx, time.Duration(m.BusyRetriesWait)); err != nil {
			return err
		}
	}
}

func (m *Modbus) readDevice(ctx context.Context, d *device) error {
	for _, kind := range []struct {
		name     string
		requests []request
		read     func(address, quantity uint16) ([]byte, error)
		bits     bool
	}{
		{"coil", d.coil, m.client.ReadCoils, true},
		{"discrete", d.discrete, m.client.ReadDiscreteInputs, true},
		{"holding", d.holding, m.client.ReadHoldingRegisters, false},
		{"input", d.input, m.client.ReadInputRegisters, false},
	} {
		for _, r := range kind.requests {
			if err := ctx.Err(); err != nil {
				return err
			}
			next := time.Now().Add(time.Duration(m.Workarounds.PollPause))
			b, err := kind.read(r.address, r.length)
			if err != nil {
				return fmt.Errorf("reading %s@%d[%d]: %w", kind.name, r.address, r.length, err)
			}
			if err := decode(r, b, kind.bits); err != nil {
				return fmt.Errorf("reading %s@%d[%d]: %w", kind.name, r.address, r.length, err)
			}
			if err := pause(ctx, time.Until(next)); err != nil {
				return err
			}
		}
	}
	return nil
}

// decode converts each field of r from the bytes read: a bit of the packed bits, or its
// registers.
func decode(r request, b []byte, bits bool) error {
	for i := range r.fields {
		f := &r.fields[i]
		offset := uint32(f.address - r.address)
		if bits {
			if int(offset/8) >= len(b) {
				return fmt.Errorf("answer of %d bytes lacks bit %d", len(b), offset)
			}
			f.value = f.convert([]byte{(b[offset/8] >> (offset % 8)) & 1})
			continue
		}
		start, end := 2*offset, 2*(offset+uint32(f.length))
		if int(end) > len(b) {
			return fmt.Errorf("answer of %d bytes lacks registers %d-%d", len(b), f.address, f.address+f.length-1)
		}
		f.value = f.convert(b[start:end])
	}
	return nil
}
