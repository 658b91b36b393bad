// lower, views: index arithmetic over the input, or a strided layout of its
// buffer when the view has one (then it costs no kernel).
#include <functional>

#include "fusion/errors.h"
#include "fusion/passes/lowerer.h"

namespace fg::lowering {

Value Lowerer::lower_view(const Node& n) {
  Value x = in(n, 0);
  const Shape& is = x.type.shape;
  const Shape& os = n.type.shape;
  // index map from output coords to input coords, and the strided layout
  // of the view over a layout of its input (none: only index arithmetic)
  std::function<Coords(const Coords&)> map;
  Relayout relayout;
  switch (n.op) {
    case Op::Reshape: {
      map = [is, os](const Coords& c) {
        return ix_unflatten(ix_linear(c, contiguous_strides(os)), is);
      };
      relayout = [os](const Layout& l) { return view_reshape(l, os); };
      break;
    }
    case Op::Permute: case Op::Transpose: {
      std::vector<int64_t> dims;
      if (n.op == Op::Permute) {
        for (auto d : attr_ints(n.attrs, "dims", n.op)) dims.push_back(norm_dim(d, is.size(), n.op));
      } else {
        for (size_t i = 0; i < is.size(); ++i) dims.push_back(static_cast<int64_t>(i));
        std::swap(dims[static_cast<size_t>(norm_dim(attr_int(n.attrs, "dim0", n.op), is.size(), n.op))],
                  dims[static_cast<size_t>(norm_dim(attr_int(n.attrs, "dim1", n.op), is.size(), n.op))]);
      }
      map = [dims](const Coords& c) {
        Coords r(c.size());
        for (size_t k = 0; k < dims.size(); ++k) r[static_cast<size_t>(dims[k])] = c[k];
        return r;
      };
      relayout = [dims](const Layout& in_l) -> std::optional<Layout> {
        Layout l = in_l;
        for (size_t k = 0; k < dims.size(); ++k) {
          l.sizes[k] = in_l.sizes[static_cast<size_t>(dims[k])];
          l.strides[k] = in_l.strides[static_cast<size_t>(dims[k])];
        }
        return l;
      };
      break;
    }
    case Op::Slice: {
      const SliceBounds sb = slice_bounds(n.attrs, is, n.op);
      const int64_t d = sb.dim, start = sb.start, step = sb.step;
      map = [d, start, step](const Coords& c) {
        Coords r = c;
        r[static_cast<size_t>(d)] = ix_add(ix_const(start), ix_mul(c[static_cast<size_t>(d)], step));
        return r;
      };
      relayout = [d, start, step, os](const Layout& in_l) -> std::optional<Layout> {
        Layout l = in_l;
        l.offset += start * l.strides[static_cast<size_t>(d)];
        l.sizes[static_cast<size_t>(d)] = os[static_cast<size_t>(d)];
        l.strides[static_cast<size_t>(d)] *= step;
        return l;
      };
      break;
    }
    case Op::Flip: {
      std::vector<int64_t> dims;
      for (int64_t d : attr_ints(n.attrs, "dims", n.op)) dims.push_back(norm_dim(d, is.size(), n.op));
      map = [dims, is](const Coords& c) {
        Coords r = c;
        for (int64_t d : dims) {
          const size_t k = static_cast<size_t>(d);
          r[k] = ix_add(ix_const(is[k] - 1), ix_mul(c[k], -1));
        }
        return r;
      };
      break;  // never a strided view: ATen's flip copies
    }
    case Op::Expand: {
      map = [is, os](const Coords& c) { return broadcast_coords(c, os, is); };
      relayout = [is, os](const Layout& in_l) -> std::optional<Layout> {
        Layout l{os, std::vector<int64_t>(os.size(), 0), in_l.offset};
        size_t off = os.size() - is.size();
        for (size_t k = 0; k < is.size(); ++k) l.strides[k + off] = is[k] == 1 ? 0 : in_l.strides[k];
        return l;
      };
      break;
    }
    default:
      internal_error("unknown view op");
  }
  if (x.storage() && relayout)
    if (std::optional<Layout> l = relayout(x.layout))
      return from_storage(x.buffer, *l, n.type.dtype, x.origins, x.lines);
  Value v;
  v.type = n.type;
  v.origins = x.origins;
  v.origins.insert(origin_of(n));
  v.lines = x.lines;
  merge(v.lines, line_of(n));
  LoadFn inner = x.load;
  v.load = memo([inner, map](const Coords& c) { return (*inner)(map(c)); });
  // a view of a value not yet in a buffer: an extern that reads it
  // realizes that value and reads it through the view (Inductor's
  // realize_input), so the value keeps its own order
  if (relayout && !x.storage()) {
    v.view_base = x.view_base >= 0 ? x.view_base : n.inputs[0];
    Relayout before = x.relayout;
    v.relayout = before ? Relayout([before, relayout](const Layout& l) -> std::optional<Layout> {
      std::optional<Layout> m = before(l);
      return m ? relayout(*m) : std::nullopt;
    })
                        : relayout;
  }
  return v;
}

}  // namespace fg::lowering
