package page_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/oncepay/oncepay/loadtest/page"
)

// chromium returns the headless browser to drive: $CHROMIUM, or Debian's
// chromium on PATH. It fails the test with a hint when there is none.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: make tools installs Debian's (deploy/tools chromium), or set CHROMIUM")
	return ""
}

// browse opens a headless Chromium tab for the test.
func browse(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 1000), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel3)
	return ctx
}

// checkPage loads the page at path in Chromium and checks that the
// verdict, every invariant, the timeline with every fault and a story
// render, that search finds a key and that hovering a fault says what it
// hit; it saves a screenshot to shot.
func checkPage(t *testing.T, path, shot string) {
	t.Helper()
	d, err := page.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := browse(t)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+abs), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(sel)+`).length`))
		if err != nil {
			t.Fatalf("count %s: %v", sel, err)
		}
		return n
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	if got := text(`#verdict`); got != d.Verdict {
		t.Errorf("verdict shown %q, want %q", got, d.Verdict)
	}
	if got, want := count(`#invariants tr.inv`), len(d.Invariants); got != want || want < 7 {
		t.Errorf("%d invariants shown, want %d (at least 7)", got, want)
	}
	if got := count(`#timeline svg polyline.series`); got != 8 {
		t.Errorf("timeline has %d series, want 8", got)
	}
	if got, want := count(`#timeline svg g.fault`), len(d.Faults); got != want {
		t.Errorf("timeline marks %d faults, want %d", got, want)
	}
	if len(d.Faults) > 0 {
		// hover the fault farthest from its neighbours, so no other
		// fault's marker lies over it
		f := d.Faults[0]
		gap := func(x page.Fault) int64 {
			g := int64(1 << 62)
			for _, y := range d.Faults {
				if y.Seq != x.Seq {
					g = min(g, max(x.AtMS-y.AtMS, y.AtMS-x.AtMS))
				}
			}
			return g
		}
		for _, x := range d.Faults {
			if gap(x) > gap(f) {
				f = x
			}
		}
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(chromedp.CSS(`#timeline`))); err != nil {
			t.Fatal(err)
		}
		box, err := chromedp.Run(ctx, chromedp.Dimensions(chromedp.CSS(fmt.Sprintf(`#timeline svg g.fault[data-seq="%d"] rect`, f.Seq))))
		if err != nil {
			t.Fatalf("find fault %d: %v", f.Seq, err)
		}
		q := box.Content
		if err := chromedp.Do(ctx, chromedp.MouseEvent(chromedp.MouseMoved, (q[0]+q[4])/2, (q[1]+q[5])/2),
			chromedp.WaitVisible(chromedp.CSS(`#tip`))); err != nil {
			t.Fatalf("hover fault %d: %v", f.Seq, err)
		}
		if tip := text(`#tip`); !strings.Contains(tip, fmt.Sprintf("fault %d ", f.Seq)) || !strings.Contains(tip, "cut off") || !strings.Contains(tip, "takeovers") {
			t.Errorf("hovering fault %d shows %q, want what it hit", f.Seq, tip)
		}
	}
	if len(d.Stories) == 0 {
		t.Fatal("the page has no stories")
	}
	// search by key: the first story a fault hit, else the first.
	want := d.Stories[0]
	for _, s := range d.Stories {
		if len(s.Faults) > 0 {
			want = s
			break
		}
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#search`), want.Key),
		chromedp.WaitVisible(chromedp.CSS(`#story-title`))); err != nil {
		t.Fatalf("search %q: %v", want.Key, err)
	}
	if got := text(`#story-title`); !strings.Contains(got, want.Key) {
		t.Errorf("searching %q shows the story %q", want.Key, got)
	}
	if got := count(`#events tr.event`); got != len(want.Events) {
		t.Errorf("story %s shows %d events, want %d", want.ID, got, len(want.Events))
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)
}

// TestPageInBrowser renders the page data of a real run (a 180 s make
// demo run with 14 faults, its stories trimmed to two per fault and a few
// more: testdata/run.json) and checks the page in headless Chromium.
func TestPageInBrowser(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d page.Data
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	// a key that the searched key is a prefix of (…-s-504 and …-s-5040):
	// typing the whole key must still open its story
	for _, s := range d.Stories {
		if len(s.Faults) > 0 {
			twin := s
			twin.ID, twin.Key, twin.PaymentID = s.ID+"0", s.Key+"0", "pay_twin"
			d.Stories = append(d.Stories, twin)
			break
		}
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := page.WriteFile(path, d); err != nil {
		t.Fatal(err)
	}
	checkPage(t, path, filepath.Join(t.TempDir(), "report.png"))
}

// TestRunPageInBrowser checks the page of the run in $ONCEPAY_REPORT_RUN
// (make test-report; make test-demo runs it on its run) and saves the
// screenshot next to it, as report.png.
func TestRunPageInBrowser(t *testing.T) {
	dir := os.Getenv("ONCEPAY_REPORT_RUN")
	if dir == "" {
		t.Skip("ONCEPAY_REPORT_RUN names no run directory (make test-report RUN=<dir>)")
	}
	checkPage(t, filepath.Join(dir, "report.html"), filepath.Join(dir, "report.png"))
}

// TestComparePageInBrowser builds make compare's page from the fixture
// run, as if a naive strategy had double-charged two of its payments, and
// checks that the strategies and those stories render.
func TestComparePageInBrowser(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run page.Data
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	hot := []string{run.Stories[0].PaymentID, run.Stories[1].Key}
	d := page.BuildCompare("60s at 30/s, seed 1", []page.CompareRun{
		{Name: "oncepay", Pass: true, Verdict: "not caught this run", Href: "oncepay/report.html", Page: run},
		{Name: "get-then-set", Verdict: "CAUGHT: 2 violation(s)", Href: "get-then-set/report.html", Page: run, Hot: hot,
			Facts: []page.Fact{{Label: "double charges", Text: "2"}}},
	})
	if len(d.Stories) != 2 || d.Pass {
		t.Fatalf("compare page: %d stories, pass %t; want the 2 double-charged, a failure", len(d.Stories), d.Pass)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := page.WriteFile(path, d); err != nil {
		t.Fatal(err)
	}
	ctx := browse(t)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		t.Fatal(err)
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#cols .strategy").length`))
	if err != nil || n != 2 {
		t.Errorf("%d strategies shown (%v), want 2", n, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#cols .strategy a[href^="#story="]`)),
		chromedp.WaitVisible(chromedp.CSS(`#story-title`))); err != nil {
		t.Fatalf("open a double-charged story: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#story-title`)))
	if err != nil || !strings.Contains(title, "get-then-set/") {
		t.Errorf("story shown %q (%v), want one of get-then-set's", title, err)
	}
}
