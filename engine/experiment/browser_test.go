package experiment

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"pfl/engine/report"
	"pfl/internal/testenv"
)

// chromiumBin finds headless Chromium (chromium-headless-shell or chromium on the PATH).
// Without one the test is skipped, or fails under PFL_REQUIRE_TEST_DATA=1 (scripts/test.sh
// installs chromium-headless-shell, so there a missing browser is a broken set-up).
func chromiumBin(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium-headless-shell", "chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const why = "no chromium-headless-shell or chromium on the PATH (Debian: apt-get install chromium-headless-shell)"
	if os.Getenv(testenv.RequireDataEnv) == "1" {
		t.Fatalf("%s; %s=1 requires it", why, testenv.RequireDataEnv)
	}
	t.Skip(why)
	return ""
}

// consoleError matches what Chromium logs (--enable-logging=stderr) for a page's console
// errors, uncaught exceptions and resources it failed to load.
var consoleError = regexp.MustCompile(`(?i)CONSOLE.*(error|uncaught)|Uncaught|Failed to load resource|Not allowed to load`)

// render loads the HTML file page in headless Chromium at the given window size and
// returns its screenshot and the console lines that report errors.
func render(t *testing.T, page string, w, h int) (image.Image, []string) {
	t.Helper()
	bin := chromiumBin(t)
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--enable-logging=stderr", "--v=0", "--user-data-dir="+t.TempDir(), "--screenshot="+shot,
		"--window-size="+itoa(w)+","+itoa(h), "file://"+abs)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, out)
	}
	var errs []string
	for _, line := range strings.Split(string(out), "\n") {
		if consoleError.MatchString(line) {
			errs = append(errs, line)
		}
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img, errs
}

func itoa(n int) string { return strconv.Itoa(n) }

// inked counts a screenshot's pixels that are not near-white and its distinct colours
// (quantized to 4 bits a channel), sampling every second pixel each way.
func inked(img image.Image) (ink, colours int) {
	seen := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if r < 230 || g < 230 || bl < 230 {
				ink++
			}
			seen[(r>>4)<<8|(g>>4)<<4|bl>>4] = true
		}
	}
	return ink, len(seen)
}

// screenshot renders a report with maps and checks that it drew text and the maps'
// colours: a page that failed to render, or whose inline images did not decode, would be
// blank or hold none of the jet colour map's saturated reds and blues; and that the page
// logged no console error.
func screenshot(t *testing.T, page string) {
	img, errs := render(t, page, 1280, 6000)
	if len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
	var dark, red, blue int
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			switch {
			case r < 60 && g < 60 && bl < 60:
				dark++
			case r > 150 && g < 90 && bl < 90:
				red++
			case bl > 150 && r < 90 && g < 120:
				blue++
			}
		}
	}
	if b.Dx() != 1280 || dark < 1000 || red < 200 || blue < 200 {
		t.Fatalf("screenshot %v: %d dark, %d red, %d blue pixels (of every fourth)", b, dark, red, blue)
	}
}

// TestGridReportRendersInChromium renders a small grid's report (two seeds of one run) in
// headless Chromium: the page must draw (text, tables and the curve figure: many inked
// pixels and colours) and log no console error. Two controls show that the checks can
// fail: a page whose script throws is caught, and a blank page is told from a drawn one.
func TestGridReportRendersInChromium(t *testing.T) {
	chromiumBin(t)
	out := t.TempDir()
	cfg := smallRun(out, "s")
	cfg.Seeds = []uint64{1, 2}
	res, err := RunGrid(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pages, err := report.Write(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	img, errs := render(t, pages[0], 1000, 1400)
	if len(errs) > 0 {
		t.Errorf("the report logged console errors:\n%s", strings.Join(errs, "\n"))
	}
	ink, colours := inked(img)
	t.Logf("report screenshot: %d inked samples, %d colours", ink, colours)
	// 1000×1400 sampled at every second pixel is 350,000 samples; the header, the tables and
	// one 7×4-inch figure ink well over 2% of them, and the figure's anti-aliased lines and
	// the table shading give dozens of colours (a blank page: 0 and 1)
	if ink < 7000 || colours < 20 {
		t.Errorf("the report's screenshot looks blank: %d inked samples, %d colours", ink, colours)
	}

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.html")
	blank := filepath.Join(dir, "blank.html")
	os.WriteFile(bad, []byte(`<!DOCTYPE html><html><body><p>x</p><script>noSuchFunction();</script></body></html>`), 0o644)
	os.WriteFile(blank, []byte(`<!DOCTYPE html><html><body></body></html>`), 0o644)
	if _, errs := render(t, bad, 400, 300); len(errs) == 0 {
		t.Error("a page whose script throws logged no console error that the check sees")
	}
	if img, errs := render(t, blank, 400, 300); len(errs) > 0 {
		t.Errorf("a blank page logged %v", errs)
	} else if ink, colours := inked(img); ink > 0 || colours > 1 {
		t.Errorf("a blank page: %d inked samples, %d colours", ink, colours)
	}
}
