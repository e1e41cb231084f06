package model

import (
	"testing"

	"pfl/cuda"
)

// TestFocalNetCounts pins FocalNet-T's exact parameter counts at 1000 classes, computed
// by hand from microsoft/FocalNet's modules, and checks them and the MACs against the
// published figures (FocalNet README, ImageNet-1k), which round to 0.1 M and 0.1 G.
//
// SRF (L = 2, kernels 3 and 5): the stem Conv2d(3 → 96, 4×4) + LayerNorm, 4,704 + 192;
// per block of width d, norm1 and norm2 4d, f d(2d + 3) + 2d + 3, the context
// convolutions (3² + 5²)·d, h and proj 2(d² + d), the MLP 8d² + 5d (230,790 for the two
// 96-wide blocks), over depths 2-2-6-2 at widths 96-192-384-768 26,099,364; the
// downsamplers Conv2d(d → 2d, 2×2) + LayerNorm, 8d² + 6d: 74,304 + 296,064 + 1,181,952;
// the final LayerNorm 1,536 and the head 768,000 + 1,000. In all 28,427,116, which rounds
// to the published 28.4 M. LRF (L = 3, kernels 3, 5, 7) adds 7²·d and one gate output of
// f (d + 1) per block, 220,812: 28,647,928, the published 28.6 M.
func TestFocalNetCounts(t *testing.T) {
	g, _ := cuda.NewGenerator(1, cuda.CPU)
	defer g.Close()
	for _, c := range []struct {
		name    string
		cfg     FocalNetConfig
		params  int64   // exact
		paramsM float64 // published, in millions (FocalNet README, ImageNet-1k)
		gmacs   float64 // published "GFLOPs" (fvcore multiply-accumulates)
	}{
		{"focalnet-t-srf", FocalNetT(1000, 2), 28427116, 28.4, 4.4},
		{"focalnet-t-lrf", FocalNetT(1000, 3), 28647928, 28.6, 4.5},
	} {
		m, err := NewFocalNet(c.name, c.cfg, 1, cuda.CPU, cuda.Float32, g)
		if err != nil {
			t.Fatal(err)
		}
		p, macs := float64(m.Params().Count())/1e6, m.MACs()/1e9
		t.Logf("%s: %d parameters, %.3f G MACs", c.name, m.Params().Count(), macs)
		if m.Params().Count() != c.params {
			t.Errorf("%s: %d parameters, want %d", c.name, m.Params().Count(), c.params)
		}
		if p < c.paramsM-0.05 || p > c.paramsM+0.05 {
			t.Errorf("%s: %.3f M parameters, published %.1f M", c.name, p, c.paramsM)
		}
		if macs < c.gmacs-0.05 || macs > c.gmacs+0.05 {
			t.Errorf("%s: %.3f G MACs, published %.1f G", c.name, macs, c.gmacs)
		}
		m.Close()
	}
}

func TestViTCountsMatchThePapers(t *testing.T) {
	g, err := cuda.NewGenerator(1, cuda.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cases := []struct {
		name       string
		cfg        ViTConfig
		params     int64 // exact, from the reference implementations' counts
		macs, tolM int64 // approximate forward MACs and tolerance, in millions
	}{
		// FedTP's tiny ViT, depth 6, CIFAR-10: 1,988,490 parameters, ~154 M MACs
		{"tiny-vit-d6", TinyViT(10, 6), 1988490, 154, 1},
		// FedTP's tiny ViT, CIFAR-100: 2,000,100 parameters
		{"tiny-vit-d6-c100", TinyViT(100, 6), 2000100, 154, 1},
		// timm ViT-S/16 at 224, 100 classes: 21,704,164 parameters, ~4.60 G MACs
		{"vit-s16-c100", ViTS16(100), 21704164, 4600, 15},
		// FedPerfix adapters (mid 256, 12 blocks) add 3,551,232 parameters
		{"vit-s16-prefix", func() ViTConfig {
			c := ViTS16(100)
			c.Prefix = PrefixConfig{Blocks: 12, Mid: 256, Scale: 1.5}
			return c
		}(), 21704164 + 3551232, 5300, 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := NewViT(c.name, c.cfg, 1, cuda.CPU, cuda.Float32, g)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if got := m.Params().Count(); got != c.params {
				t.Errorf("parameters %d, want %d", got, c.params)
			}
			if got := m.MACs(); got < float64(c.macs-c.tolM)*1e6 || got > float64(c.macs+c.tolM)*1e6 {
				t.Errorf("MACs %.4g, want %d ± %d M", got, c.macs, c.tolM)
			}
			t.Logf("%s: %d parameters, %.4g MACs", c.name, m.Params().Count(), m.MACs())
		})
	}
}

func TestSmallModelCounts(t *testing.T) {
	for _, c := range []struct {
		preset       string
		classes      int64
		params, macs int64
	}{
		// FedTP's Shakespeare Transformer, depth 2: 683,008 parameters (reference count);
		// per layer over 80 tokens: QKV 80·128·1536, attention 2·80²·512, output 80·512·128,
		// FFN 2·80·128·256; then the projection 80·128·100
		{"text-transformer", 100, 683008, 2*(80*128*1536+2*80*80*512+80*512*128+2*80*128*256) + 80*128*100},
		// embedding 100·8; layer 0: 4·256·(8+256) + 2·1024; layer 1: 4·256·512 + 2·1024; decoder 256·100 + 100
		{"lstm", 100, 800 + 272384 + 526336 + 25700, 80 * (4*256*(8+256) + 4*256*512 + 256*100)},
		// conv1 3·16·25+16, conv2 16·32·25+32, fc 800·120+120, 120·84+84, 84·10+10;
		// MACs: 16·3·25·28² + 32·16·25·10² + 800·120 + 120·84 + 84·10
		{"convnet", 10, 121182, 940800 + 1280000 + 106920},
		{"convnet-bn", 10, 121182 + 2*(16+32+120+84), 940800 + 1280000 + 106920},
	} {
		p, err := Lookup(c.preset)
		if err != nil {
			t.Fatal(err)
		}
		m, err := p.Build(c.classes, 1, cuda.CPU, cuda.Float32, nil) // declared, not allocated
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Params().Count(); got != c.params {
			t.Errorf("%s: %d parameters, want %d", c.preset, got, c.params)
		}
		if got := m.MACs(); got != float64(c.macs) {
			t.Errorf("%s: %.0f MACs, want %d", c.preset, got, c.macs)
		}
	}
	if _, err := Lookup("vit-huge"); err == nil {
		t.Error("unknown preset accepted")
	}
}

// TestPrefixCounts: the exact parameter counts and forward MACs of every prefix and MLP
// adapter on timm's ViT-S/16 at 100 classes (dim 384 = inner, 197 tokens, 12 blocks). The
// MACs are the plain ViT-S/16's plus what each plug-in adds: producing the prefixes
// (197 tokens through their layers) and, in the concat form, Q Kᵀ and attention · V over
// the L extra keys, 2·197·L·384 per block.
func TestPrefixCounts(t *testing.T) {
	const (
		blocks, tokens, dim = 12, 197, 384
		base                = 21704164 // ViT-S/16, 100 classes
		concatPerToken      = blocks * 2 * tokens * tokens * dim
	)
	plain, err := NewViT("vit-s16", ViTS16(100), 1, cuda.CPU, cuda.Float32, nil) // declared only
	if err != nil {
		t.Fatal(err)
	}
	baseMACs := plain.MACs()
	cases := []struct {
		name     string
		prefix   PrefixConfig
		adapter  MLPAdapterConfig
		params   int64 // RoleAdapter parameters
		perBlock int64 // RoleAdapter parameters of block 11 (0: none there)
		macs     int64 // MACs added to ViT-S/16's
	}{
		// FedPerfix: down 384·256 + 256, up 256·768 + 768 = 295,936 per block
		{"fedperfix-mid256", PrefixConfig{Blocks: 12, Mid: 256, Scale: 1.5}, MLPAdapterConfig{},
			3551232, 295936, blocks * tokens * (dim*256 + 256*2*dim)},
		// the official code's default mid 512: 384·512 + 512 + 512·768 + 768 = 591,104 per
		// block, 12·591,104 = 7,093,248
		{"fedperfix-mid512", PrefixConfig{Blocks: 12, Mid: 512, Scale: 0.8}, MLPAdapterConfig{},
			7093248, 591104, blocks * tokens * (dim*512 + 512*2*dim)},
		// the paper's form: the same adapter, 197 more keys per block
		{"fedperfix-concat", PrefixConfig{Blocks: 12, Mid: 256, Scale: 1.5, Form: PrefixConcat}, MLPAdapterConfig{},
			3551232, 295936, blocks*tokens*(dim*256+256*2*dim) + concatPerToken},
		// the last 4 blocks only
		{"fedperfix-4-blocks", PrefixConfig{Blocks: 4, Mid: 256}, MLPAdapterConfig{},
			4 * 295936, 295936, 4 * tokens * (dim*256 + 256*2*dim)},
		// the official vanilla prefix: 384·768 + 768 = 295,680 per block
		{"linear-add-zero", PrefixConfig{Blocks: 12, Kind: PrefixLinear, Init: PrefixInitZero}, MLPAdapterConfig{},
			3548160, 295680, blocks * tokens * dim * 2 * dim},
		{"linear-concat", PrefixConfig{Blocks: 12, Kind: PrefixLinear, Form: PrefixConcat}, MLPAdapterConfig{},
			3548160, 295680, blocks*tokens*dim*2*dim + concatPerToken},
		// 10 prefix tokens: P_k and P_v of 10·384 per block, attention over 10 more keys
		{"tokens-10", PrefixConfig{Blocks: 12, Kind: PrefixTokens, Form: PrefixConcat, Length: 10}, MLPAdapterConfig{},
			92160, 7680, blocks * 2 * tokens * 10 * dim},
		// MLP adapters, mid 64: 384·64 + 64 + 64·384 + 384 = 49,600 each, applied in 12 blocks
		{"mlp-adapter", PrefixConfig{}, MLPAdapterConfig{Mid: 64}, 12 * 49600, 49600, blocks * 2 * tokens * dim * 64},
		{"mlp-adapter-shared", PrefixConfig{}, MLPAdapterConfig{Mid: 64, Shared: true}, 49600, 0, blocks * 2 * tokens * dim * 64},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := ViTS16(100)
			cfg.Prefix, cfg.MLPAdapter = c.prefix, c.adapter
			m, err := NewViT(c.name, cfg, 1, cuda.CPU, cuda.Float32, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Params().CountByRole()[RoleAdapter]; got != c.params {
				t.Errorf("adapter parameters %d, want %d", got, c.params)
			}
			if got := m.Params().Count(); got != base+c.params {
				t.Errorf("parameters %d, want %d", got, base+c.params)
			}
			var block int64
			for _, p := range m.Params().ByRole(RoleAdapter) {
				if p.Block == 11 {
					block += p.Numel()
				}
			}
			if block != c.perBlock {
				t.Errorf("adapter parameters of block 11: %d, want %d", block, c.perBlock)
			}
			if got := m.MACs() - baseMACs; got != float64(c.macs) {
				t.Errorf("added MACs %.0f, want %d", got, c.macs)
			}
		})
	}
	// the FedPerfix preset: 21,704,164 + 3,551,232 = 25,255,396 (the official count)
	p, _ := Lookup("vit-s16-perfix")
	m, err := p.Build(100, 1, cuda.CPU, cuda.Float32, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Params().Count(); got != 25255396 {
		t.Errorf("vit-s16-perfix: %d parameters, want 25,255,396", got)
	}
}

// fedavgcnn is PFLlib's FedAvgCNN (system/flcore/trainmodel/models.py), counted by hand
// from its definition: Conv2d(in, 32, 5) → ReLU → MaxPool 2 → Conv2d(32, 64, 5) → ReLU →
// MaxPool 2 → Linear(dim, 512) → ReLU → fc = Linear(512, classes), with PFLlib's dim 1024
// for MNIST-like 28×28×1 images (64·4·4) and 1600 for CIFAR-10's 32×32×3 (64·5·5). fc is
// the head PFLlib's BaseHeadSplit splits off, so it must be pfl's role head alone.
func TestFedAvgCNNMatchesPFLlib(t *testing.T) {
	for _, c := range []struct {
		image, channels int64
		conv, fc, head  int64
		total, macs     int64
	}{
		// conv1 1·32·25+32 = 832, conv2 32·64·25+64 = 51,264; fc1 1024·512+512 = 524,800;
		// head 512·10+10 = 5,130: 582,026 in all. MACs: 32·1·25·24² + 64·32·25·8² + 1024·512 + 512·10
		{28, 1, 832 + 51264, 524800, 5130, 582026, 460800 + 3276800 + 524288 + 5120},
		// conv1 3·32·25+32 = 2,432; fc1 1600·512+512 = 819,712: 878,538 in all.
		// MACs: 32·3·25·28² + 64·32·25·10² + 1600·512 + 512·10
		{32, 3, 2432 + 51264, 819712, 5130, 878538, 1881600 + 5120000 + 819200 + 5120},
	} {
		m, err := Build(Spec{Preset: "fedavgcnn", Image: c.image, Channels: c.channels, Classes: 10}, 1, cuda.CPU, cuda.Float32, nil)
		if err != nil {
			t.Fatal(err)
		}
		by := m.Params().CountByRole()
		if by[RoleConv] != c.conv || by[RoleFC] != c.fc || by[RoleHead] != c.head {
			t.Errorf("%d×%d×%d: conv %d, hidden FC %d, head %d parameters; want %d, %d, %d", c.image, c.image, c.channels,
				by[RoleConv], by[RoleFC], by[RoleHead], c.conv, c.fc, c.head)
		}
		if got := m.Params().Count(); got != c.total {
			t.Errorf("%d×%d×%d: %d parameters, want %d", c.image, c.image, c.channels, got, c.total)
		}
		if got := m.MACs(); got != float64(c.macs) {
			t.Errorf("%d×%d×%d: %.0f MACs, want %d", c.image, c.image, c.channels, got, c.macs)
		}
		if h, ok := m.(Headed); !ok || h.FeatureDim() != 512 {
			t.Errorf("%d×%d×%d: the head should read the 512 features of FC 512", c.image, c.image, c.channels)
		}
		// fedavgcnn-bn adds a BatchNorm (weight and bias per channel, role norm) after
		// conv1 (32), conv2 (64) and FC 512, and nothing else
		bn, err := Build(Spec{Preset: "fedavgcnn-bn", Image: c.image, Channels: c.channels, Classes: 10}, 1, cuda.CPU, cuda.Float32, nil)
		if err != nil {
			t.Fatal(err)
		}
		if by := bn.Params().CountByRole(); by[RoleNorm] != 2*(32+64+512) || bn.Params().Count() != c.total+2*(32+64+512) {
			t.Errorf("%d×%d×%d: fedavgcnn-bn has %d parameters, %d of them norm; want %d and %d", c.image, c.image, c.channels,
				bn.Params().Count(), by[RoleNorm], c.total+2*(32+64+512), 2*(32+64+512))
		}
	}
}

// digit5cnn is PFLlib's Digit5CNN, whose names, shapes and parameter count
// TestDigit5CNNMatchesPFLlib checks against PFLlib's own module; here the roles FedBN and
// the head-splitting algorithms read, and the MACs, counted by hand on 32×32×3 images:
// convolutions 3·64·25+64 = 4,864, 64·64·25+64 = 102,464 and 64·128·25+128 = 204,928;
// BatchNorm affines 2·(64+64+128+3072+2048) = 10,752; hidden FCs 8192·3072+3072 =
// 25,168,896 and 3072·2048+2048 = 6,293,504; head 2048·10+10 = 20,490. MACs: 64·3·25·32² +
// 64·64·25·16² + 128·64·25·8² + 8192·3072 + 3072·2048 + 2048·10.
func TestDigit5CNNRoles(t *testing.T) {
	m, err := Build(Spec{Preset: "digit5cnn", Classes: 10}, 1, cuda.CPU, cuda.Float32, nil)
	if err != nil {
		t.Fatal(err)
	}
	by := m.Params().CountByRole()
	for _, c := range []struct {
		role Role
		want int64
	}{
		{RoleConv, 4864 + 102464 + 204928}, {RoleNorm, 10752},
		{RoleFC, 25168896 + 6293504}, {RoleHead, 20490},
	} {
		if by[c.role] != c.want {
			t.Errorf("digit5cnn: %d parameters of role %v, want %d", by[c.role], c.role, c.want)
		}
	}
	if want := 4915200 + 26214400 + 13107200 + 25165824 + 6291456 + 20480; m.MACs() != float64(want) {
		t.Errorf("digit5cnn: %.0f MACs, want %d", m.MACs(), want)
	}
	if h, ok := m.(Headed); !ok || h.FeatureDim() != 2048 {
		t.Errorf("digit5cnn: the head should read the 2048 features of the second hidden FC")
	}
}
