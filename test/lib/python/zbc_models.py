"""The test models and the schedule registry, for the Python test drivers.

One home for what verify_every_schedule.py (test/Passes/Inputs) and the e2e
suite (test/e2e/e2e.py) build their cases from: the example MLP with one
layer per stage, the example GPT with one block per stage (zbc-dsl-gpt), the
example Llama with one decoder layer per stage (zbc-dsl-llama), and
every registered schedule with its stages per rank, read from
`zbc schedule --list` so that a schedule added later is tested too.
"""
import subprocess


def mlp(stages):
    """The example MLP's layers (linear, bias, ReLU), one per stage."""
    lines = ["zb.model @mlp {",
             '  %x0 = zb.input "x" : tensor<8x16xf32>',
             '  %y = zb.label "y" : tensor<8xi64>']
    width = 16
    for i in range(stages):
        out = 8 if i == stages - 1 else 64
        t_in, t_out = f"tensor<8x{width}xf32>", f"tensor<8x{out}xf32>"
        lines += [
            f'  %w{i} = zb.param "fc{i}.weight" init normal(0.1) : tensor<{width}x{out}xf32>',
            f'  %b{i} = zb.param "fc{i}.bias" init zeros : tensor<{out}xf32>',
            f"  %h{i} = zb.linear %x{i}, %w{i} : ({t_in}, tensor<{width}x{out}xf32>) -> {t_out}",
            f"  %hb{i} = zb.bias_add %h{i}, %b{i} : ({t_out}, tensor<{out}xf32>) -> {t_out}"]
        if i < stages - 1:
            lines += [f"  %r{i} = zb.relu %hb{i} : {t_out}",
                      f"  %x{i + 1} = zb.cut %r{i} : {t_out}"]
        width = out
    lines += [f"  %l = zb.cross_entropy %hb{stages - 1}, %y : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32>",
              "  zb.loss %l : tensor<f32>", "}"]
    return "\n".join(lines) + "\n"


def tied_mlp():
    """The example MLP with 4 layers, the middle two (stages 1 and 2) sharing
    one 64x64 weight: a parameter tied across stages."""
    lines = [l for l in mlp(4).splitlines() if '%w2 = zb.param' not in l]
    return "\n".join(l.replace("%w2", "%w1") for l in lines) + "\n"


def gpt(dsl_gpt, stages, *args):
    """The example GPT (zbc-dsl-gpt), one block per stage."""
    return subprocess.run([dsl_gpt, "--layers", str(stages), *args], text=True,
                          check=True, capture_output=True).stdout


def llama(dsl_llama, stages, *args):
    """The example Llama (zbc-dsl-llama), one decoder layer per stage."""
    return subprocess.run([dsl_llama, "--layers", str(stages), *args],
                          text=True, check=True, capture_output=True).stdout


def schedules(zbc):
    """Every registered schedule, with its stages per rank (1 or 2)."""
    out = subprocess.run([zbc, "schedule", "--list"], text=True, check=True,
                         capture_output=True).stdout
    result, current = [], None
    for line in out.splitlines():
        if line and not line.startswith(" "):
            current = line.strip()
        elif current and "placement:" in line:
            kind = line.split("placement:")[1].strip()
            result.append((current, 1 if kind == "linear" else 2))
            current = None
    return result
