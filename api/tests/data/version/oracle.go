// Command oracle answers version-range questions with the Go libraries upstream links, one JSON
// array per input line, one JSON object per output line (see README.md).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	mm "github.com/Masterminds/semver/v3"
	bl "github.com/blang/semver/v4"
)

type out struct {
	Ok     bool   `json:"ok"`
	Err    string `json:"err,omitempty"`
	VErr   string `json:"verr,omitempty"`
	Match  *bool  `json:"match,omitempty"`
	Panic  bool   `json:"panic,omitempty"`
	String string `json:"string,omitempty"`
}

func run(in []string) (o out) {
	defer func() {
		if r := recover(); r != nil {
			o = out{Panic: true, Err: fmt.Sprint(r)}
		}
	}()
	switch in[0] {
	case "mm":
		c, err := mm.NewConstraint(in[1])
		if err != nil {
			return out{Err: err.Error()}
		}
		o.Ok = true
		if len(in) > 2 {
			v, err := mm.NewVersion(in[2])
			if err != nil {
				o.VErr = err.Error()
				return
			}
			m := c.Check(v)
			o.Match = &m
		}
		return
	case "mmv":
		v, err := mm.NewVersion(in[1])
		if err != nil {
			return out{Err: err.Error()}
		}
		return out{Ok: true, String: v.String()}
	case "bv":
		v, err := bl.Parse(in[1])
		if err != nil {
			return out{Err: err.Error()}
		}
		return out{Ok: true, String: v.String()}
	case "br":
		r, err := bl.ParseRange(in[1])
		if err != nil {
			return out{Err: err.Error()}
		}
		o.Ok = true
		if len(in) > 2 {
			v, err := bl.Parse(in[2])
			if err != nil {
				o.VErr = err.Error()
				return
			}
			m := r(v)
			o.Match = &m
		}
		return
	}
	return out{Err: "bad mode"}
}

func main() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	for sc.Scan() {
		var in []string
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		enc.Encode(run(in))
	}
}
