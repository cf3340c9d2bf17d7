#include "harness/report/svg.hpp"

#include <cstdint>
#include <cstdio>

#include "harness/report/text_table.hpp"

namespace oomlab::report {

namespace {

std::string num(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  std::string out = text;
  if (out.size() > 2 && out.compare(out.size() - 2, 2, ".0") == 0) out.resize(out.size() - 2);
  return out;
}

std::string style_attributes(const Svg::Style& s) {
  std::string out = " fill=\"" + s.fill + "\"";
  if (s.opacity < 1) {
    char opacity[16];
    std::snprintf(opacity, sizeof opacity, "%.2f", s.opacity);
    out += std::string(" fill-opacity=\"") + opacity + "\"";
  }
  if (s.stroke != "none") {
    out += " stroke=\"" + s.stroke + "\" stroke-width=\"" + num(s.stroke_width) + "\"";
    if (!s.dash.empty()) out += " stroke-dasharray=\"" + s.dash + "\"";
  }
  return out;
}

std::string points_text(const std::vector<std::pair<double, double>>& points) {
  std::string out;
  for (const auto& [x, y] : points) out += (out.empty() ? "" : " ") + num(x) + "," + num(y);
  return out;
}

}  // namespace

namespace {

// The length of the UTF-8 sequence XML 1.0 can hold at text[i], 0 when none starts there: no
// overlong forms, surrogates, code points past U+10FFFF, or the non-characters U+FFFE/U+FFFF.
std::size_t xml_sequence_length(const std::string& text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char lead = byte(0);
  std::size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
  if (lead >= 0xF5 || (lead >= 0x80 && lead < 0xC2) || i + length > text.size()) return 0;
  std::uint32_t code = lead & (0x7F >> length);
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(k) & 0x3F);
  }
  const bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
  const bool surrogate = code >= 0xD800 && code <= 0xDFFF;
  if (overlong || surrogate || code > 0x10FFFF || code == 0xFFFE || code == 0xFFFF) return 0;
  return length;
}

}  // namespace

std::string xml_escape(const std::string& text) {
  static const char* const kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80) {
      const std::size_t length = xml_sequence_length(text, i);
      if (length == 0) {
        out += kReplacement;
      } else {
        out.append(text, i, length);
        i += length - 1;
      }
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        // XML 1.0 cannot hold most C0 bytes at all (a NUL or ESC makes the file invalid): a label
        // is one line, so every control byte is shown as printable_text would.
        if (byte < 0x20 || byte == 0x7F) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", byte);
          out += hex;
        } else {
          out += c;
        }
    }
  }
  return out;
}

Svg::Style Svg::filled(std::string colour, double opacity) {
  Style style;
  style.fill = std::move(colour);
  style.opacity = opacity;
  return style;
}

Svg::Style Svg::stroked(std::string colour, double width, std::string dash) {
  Style style;
  style.stroke = std::move(colour);
  style.stroke_width = width;
  style.dash = std::move(dash);
  return style;
}

Svg::Style Svg::outlined(std::string fill, std::string stroke, double width) {
  Style style = stroked(std::move(stroke), width);
  style.fill = std::move(fill);
  return style;
}

Svg::Svg(double width, double height) : width_(width), height_(height) {}

void Svg::rect(double x, double y, double w, double h, const Style& style, const std::string& title) {
  body_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(h) + "\"" +
           style_attributes(style);
  body_ += title.empty() ? "/>\n" : "><title>" + xml_escape(title) + "</title></rect>\n";
}

void Svg::line(double x1, double y1, double x2, double y2, const Style& style) {
  body_ += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\"" +
           style_attributes(style) + "/>\n";
}

void Svg::polygon(const std::vector<std::pair<double, double>>& points, const Style& style) {
  body_ += "<polygon points=\"" + points_text(points) + "\"" + style_attributes(style) + "/>\n";
}

void Svg::polyline(const std::vector<std::pair<double, double>>& points, const Style& style) {
  body_ += "<polyline points=\"" + points_text(points) + "\"" + style_attributes(style) + "/>\n";
}

void Svg::text(double x, double y, const std::string& content, const Font& font) {
  static const char* anchors[] = {"start", "middle", "end"};
  body_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + num(font.size) + "\" text-anchor=\"" +
           anchors[static_cast<int>(font.anchor)] + "\" fill=\"" + font.fill + "\"";
  if (font.bold) body_ += " font-weight=\"bold\"";
  if (font.rotate != 0) body_ += " transform=\"rotate(" + num(font.rotate) + " " + num(x) + " " + num(y) + ")\"";
  body_ += ">" + xml_escape(content) + "</text>\n";
}

double Svg::text_width(const std::string& content, double size) {
  return static_cast<double>(display_width(content)) * size * 0.6;
}

std::string Svg::str() const {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width_) + "\" height=\"" + num(height_) +
         "\" viewBox=\"0 0 " + num(width_) + " " + num(height_) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n" +
         "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" + body_ + "</svg>\n";
}

}  // namespace oomlab::report
