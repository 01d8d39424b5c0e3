package file

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// encoder compresses what one Write writes, as Telegraf's compression_algorithm does. Each
// Write becomes one gzip member or zstd frame, so the file is one valid gzip or zstd stream
// that `zcat` or `zstdcat` reads whole; with zlib, as in Telegraf, it is a sequence of zlib
// streams.
type encoder interface {
	encode(dst *bytes.Buffer, data []byte) error
}

// newEncoder checks the algorithm and level as Telegraf does. Level -1 is the algorithm's
// default; without an algorithm only -1 is accepted.
func newEncoder(algorithm string, level int) (encoder, error) {
	switch algorithm {
	case "", "identity":
		if level >= 0 {
			return nil, errors.New("compression_level needs a compression_algorithm")
		}
		return nil, nil
	case "gzip", "zlib":
		switch level {
		case -1, 0, 1, 9:
		default:
			return nil, fmt.Errorf("invalid compression level %d for %s, only 0, 1 and 9 are supported", level, algorithm)
		}
		if algorithm == "gzip" {
			return gzipEncoder{level: level}, nil
		}
		return zlibEncoder{level: level}, nil
	case "zstd":
		levels := map[int]zstd.EncoderLevel{-1: zstd.SpeedDefault, 1: zstd.SpeedFastest, 3: zstd.SpeedDefault,
			7: zstd.SpeedBetterCompression, 11: zstd.SpeedBestCompression}
		l, ok := levels[level]
		if !ok {
			return nil, fmt.Errorf("invalid compression level %d for zstd, only 1, 3, 7 and 11 are supported", level)
		}
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(l))
		if err != nil {
			return nil, err
		}
		return zstdEncoder{enc: enc}, nil
	}
	return nil, fmt.Errorf("%q is not supported: use \"zstd\", \"gzip\" or \"zlib\", or leave it empty", algorithm)
}

type gzipEncoder struct{ level int }

func (e gzipEncoder) encode(dst *bytes.Buffer, data []byte) error {
	w, err := gzip.NewWriterLevel(dst, e.level)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	return w.Close()
}

type zlibEncoder struct{ level int }

func (e zlibEncoder) encode(dst *bytes.Buffer, data []byte) error {
	w, err := zlib.NewWriterLevel(dst, e.level)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	return w.Close()
}

type zstdEncoder struct{ enc *zstd.Encoder }

func (e zstdEncoder) encode(dst *bytes.Buffer, data []byte) error {
	dst.Write(e.enc.EncodeAll(data, nil))
	return nil
}
