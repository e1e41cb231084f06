package model

// Role says what a parameter does, so algorithms can pick parts by role.
type Role int

// Roles.
const (
	RolePatchEmbed   Role = iota // patch embedding (linear or convolution stem)
	RolePosEmbed                 // learned position embedding
	RoleCLS                      // class token
	RoleAttnQKV                  // self-attention Q, K, V projections (fused or separate)
	RoleAttnOut                  // self-attention output projection
	RoleMLP                      // feed-forward layers of a block
	RoleNorm                     // LayerNorm / BatchNorm affine
	RoleNormStats                // BatchNorm running mean and variance (buffers, not trained)
	RoleHead                     // classifier (or output projection) weights
	RoleFocalF                   // FocalNet modulation input projection f: C -> 2C+L+1
	RoleFocalCtx                 // FocalNet depthwise context convolutions
	RoleFocalH                   // FocalNet modulator projection h (1x1)
	RoleFocalProj                // FocalNet output projection
	RoleDownsample               // FocalNet stage downsampling convolutions
	RoleAdapter                  // adapters: FedPerfix's K/V prefixes of every kind (adapter, linear, tokens), MLP adapters
	RolePrompt                   // prompt tokens
	RoleEmbedding                // token embedding of text models
	RoleConv                     // convolutions of the ConvNet
	RoleFC                       // hidden fully-connected layers of the ConvNet
	RoleRecurrent                // LSTM weights and biases
	RolePersonalHead             // a second, personal classifier beside the head (FedRoD)
	RoleMixing                   // a per-client weight mixing two models (APFL's α)
	RoleInducing                 // learned inducing inputs in a feature space (pFedGP-IP)
	numRoles
)

var roleNames = [...]string{
	"patch_embed", "pos_embed", "cls", "attn_qkv", "attn_out", "mlp", "norm", "norm_stats",
	"head", "focal_f", "focal_ctx", "focal_h", "focal_proj", "downsample", "adapter",
	"prompt", "embedding", "conv", "fc", "recurrent", "personal_head", "mixing",
	"inducing",
}

// FocalRoles are the parameters of a FocalNet's focal-modulation layer: f, the context
// convolutions, h and proj (what TransFed generates and Vanilla customized-T keeps local).
func FocalRoles() []Role { return []Role{RoleFocalF, RoleFocalCtx, RoleFocalH, RoleFocalProj} }

// String is the role's name, as ParseRole reads it.
func (r Role) String() string {
	if r >= 0 && r < numRoles {
		return roleNames[r]
	}
	return "role?"
}

// Roles lists every role in order.
func Roles() []Role {
	out := make([]Role, numRoles)
	for i := range out {
		out[i] = Role(i)
	}
	return out
}

// ParseRole reads a role's name.
func ParseRole(s string) (Role, bool) {
	for i, n := range roleNames {
		if n == s {
			return Role(i), true
		}
	}
	return 0, false
}
