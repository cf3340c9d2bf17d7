// A small SVG writer: the report's charts are drawn by oomlab itself, with no plotting
// dependency. Coordinates are pixels from the top left; text is escaped.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace oomlab::report {

class Svg {
 public:
  Svg(double width, double height);

  struct Style {
    std::string fill = "none";
    std::string stroke = "none";
    double stroke_width = 1;
    std::string dash;    // "4,3"
    double opacity = 1;  // fill opacity
  };
  static Style filled(std::string colour, double opacity = 1);
  static Style stroked(std::string colour, double width = 1, std::string dash = "");
  static Style outlined(std::string fill, std::string stroke, double width);
  enum class Anchor { start, middle, end };
  struct Font {
    double size = 12;
    Anchor anchor = Anchor::start;
    bool bold = false;
    std::string fill = "#222";
    double rotate = 0;  // degrees, about the text's anchor point
  };

  void rect(double x, double y, double width, double height, const Style& style, const std::string& title = "");
  void line(double x1, double y1, double x2, double y2, const Style& style);
  void polygon(const std::vector<std::pair<double, double>>& points, const Style& style);
  void polyline(const std::vector<std::pair<double, double>>& points, const Style& style);
  void text(double x, double y, const std::string& content, const Font& font);
  // The width `content` takes at `size`, estimated for a sans-serif font (layout without a font
  // engine: generous, so labels never overlap).
  static double text_width(const std::string& content, double size);

  double width() const { return width_; }
  double height() const { return height_; }
  std::string str() const;

 private:
  double width_, height_;
  std::string body_;
};

// `text` as XML 1.0 character data or attribute value: markup characters as entities, control
// bytes as "\x1b" (XML cannot hold them), bytes that are not UTF-8 as U+FFFD.
std::string xml_escape(const std::string& text);

}  // namespace oomlab::report
