package archtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Module is the path prefix of every oncepay package.
const Module = "github.com/oncepay/oncepay"

// Package is the part of `go list -json` output the rules read.
type Package struct {
	ImportPath string
	Name       string
	Imports    []string
	Standard   bool
	DepOnly    bool
}

// Graph maps an import path to its package.
type Graph map[string]Package

// ReadGraph decodes the stream of JSON objects that `go list -json` writes.
func ReadGraph(r io.Reader) (Graph, error) {
	g := Graph{}
	dec := json.NewDecoder(r)
	for {
		var p Package
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return g, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		g[p.ImportPath] = p
	}
}

// Roots returns the sorted import paths of the packages that match keep
// and were named by the pattern (not pulled in only as dependencies).
func (g Graph) Roots(keep func(Package) bool) []string {
	var out []string
	for path, p := range g {
		if !p.DepOnly && keep(p) {
			out = append(out, path)
		}
	}
	slices.Sort(out)
	return out
}

// Chain returns the shortest import chain from root to a package for which
// bad reports true, as "root -> ... -> bad", or "" if root reaches none.
// root itself is not tested.
func (g Graph) Chain(root string, bad func(Package) bool) string {
	parent := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, imp := range g[cur].Imports {
			if _, seen := parent[imp]; seen {
				continue
			}
			parent[imp] = cur
			if p, ok := g[imp]; ok && bad(p) {
				var chain []string
				for at := imp; at != ""; at = parent[at] {
					chain = append(chain, strings.TrimPrefix(at, Module+"/"))
				}
				slices.Reverse(chain)
				return strings.Join(chain, " -> ")
			}
			queue = append(queue, imp)
		}
	}
	return ""
}

// under reports whether path is dir or a package below it; dir is relative
// to Module.
func under(path, dir string) bool {
	full := Module + "/" + dir
	return path == full || strings.HasPrefix(path, full+"/")
}

// IsLibrary reports whether p belongs to the boundary library.
func IsLibrary(p Package) bool { return under(p.ImportPath, "lua") || under(p.ImportPath, "pkg/idem") }

// IsShared reports whether p is a shared package under pkg/.
func IsShared(p Package) bool { return under(p.ImportPath, "pkg") }

// Service returns the name of the service p belongs to, or "".
func Service(p Package) string {
	rest, ok := strings.CutPrefix(p.ImportPath, Module+"/services/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// IsRig reports whether p is part of the test rig: internal/..., loadtest/...,
// or a test-helper package (its name ends in "test", as net/http/httptest).
func IsRig(p Package) bool {
	if !strings.HasPrefix(p.ImportPath, Module+"/") {
		return false
	}
	return under(p.ImportPath, "internal") || under(p.ImportPath, "loadtest") || strings.HasSuffix(p.Name, "test")
}

// IsProduct reports whether p is product code: a service, a shared package
// or the library, and not a test helper.
func IsProduct(p Package) bool {
	return (Service(p) != "" || IsShared(p) || IsLibrary(p)) && !IsRig(p)
}

// IsBinary reports whether p is a production binary: a main package of a
// service.
func IsBinary(p Package) bool { return Service(p) != "" && p.Name == "main" }

// IsTeaching reports whether p is a teaching strategy (pkg/idem/naive).
func IsTeaching(p Package) bool { return under(p.ImportPath, "pkg/idem/naive") }

// ServiceExceptions are the packages of one service that another service
// may import.
var ServiceExceptions = []string{Module + "/services/psp/pspclient"}

// Rule is one dependency rule: every root must reach no bad package.
type Rule struct {
	Name string
	Root func(Package) bool
	// Bad reports whether root may not depend on p.
	Bad func(root, p Package) bool
}

// Rules are the dependency rules of docs/architecture.md over packages.
var Rules = []Rule{
	{
		Name: "the library imports no other oncepay package",
		Root: IsLibrary,
		Bad: func(_, p Package) bool {
			return strings.HasPrefix(p.ImportPath, Module+"/") && !IsLibrary(p)
		},
	},
	{
		Name: "shared packages import no service",
		Root: func(p Package) bool { return IsShared(p) && !IsRig(p) },
		Bad:  func(_, p Package) bool { return Service(p) != "" },
	},
	{
		Name: "a service imports no other service's packages (except the psp client)",
		Root: func(p Package) bool { return Service(p) != "" && !IsRig(p) },
		Bad: func(root, p Package) bool {
			s := Service(p)
			return s != "" && s != Service(root) && !slices.Contains(ServiceExceptions, p.ImportPath)
		},
	},
	{
		Name: "the product imports no test rig",
		Root: IsProduct,
		Bad:  func(_, p Package) bool { return IsRig(p) },
	},
	{
		Name: "production binaries do not link the teaching strategies (pkg/idem/naive)",
		Root: IsBinary,
		Bad:  func(_, p Package) bool { return IsTeaching(p) },
	},
}

// Check returns one line per root that breaks r, naming the chain.
func (g Graph) Check(r Rule) []string {
	var out []string
	for _, root := range g.Roots(r.Root) {
		rp := g[root]
		if chain := g.Chain(root, func(p Package) bool { return r.Bad(rp, p) }); chain != "" {
			out = append(out, chain)
		}
	}
	return out
}
